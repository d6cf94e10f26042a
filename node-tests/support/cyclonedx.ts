// Validation of CycloneDX 1.6 documents against the official JSON schemas stored in
// test-data/vectors/cyclonedx (see its README for provenance). The three schemas are registered with
// ajv under their `$id`s, so the relative `$ref`s of bom-1.6.schema.json to spdx.schema.json and
// jsf-0.82.schema.json resolve locally. Strict mode stays on, so no keyword or format is ignored:
// the schemas' one non-standard keyword (`meta:enum`, documentation of enum values) is declared, and
// the two formats ajv-formats lacks are defined here (an IRI reference is checked as the URI
// reference its non-ASCII characters percent-encode to, RFC 3987 §3.1; an internationalized e-mail
// likewise). Only `strictRequired` is off: it lints how a schema is written (a `required` name that
// the same subschema does not define, as upstream's top-level `oneOf` does), not the document.

import Ajv, { type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import { loadVector } from './vectors';

/** The schemas, and the upstream example CBOMs the validator is first shown to accept. */
export const CYCLONEDX_SCHEMAS = [
  'cyclonedx/bom-1.6.schema.json',
  'cyclonedx/spdx.schema.json',
  'cyclonedx/jsf-0.82.schema.json',
] as const;
export const CYCLONEDX_EXAMPLES = [
  'cyclonedx/examples/valid-cryptography-full-1.6.json',
  'cyclonedx/examples/valid-cryptography-implementation-1.6.json',
] as const;
/** Every CycloneDX file the tests read (node-tests/vectors-provenance.test.ts checks the set). */
export const CYCLONEDX_FILES: readonly string[] = [...CYCLONEDX_SCHEMAS, ...CYCLONEDX_EXAMPLES];

const uriReference = fullFormats['uri-reference'] as (s: string) => boolean;
const email = fullFormats.email as RegExp;
// Every non-ASCII character percent-encodes to ASCII; what is left must be a URI reference.
const iriReference = (s: string) => uriReference(s.replace(/[^\x00-\x7f]/gu, (c) => encodeURIComponent(c)));
const idnEmail = (s: string) => email.test(s.replace(/[^\x00-\x7f]/gu, 'a'));

let compiled: (((doc: unknown) => boolean) & { errors?: ErrorObject[] | null }) | undefined;

/**
 * Validates `doc` against bom-1.6.schema.json (with its spdx and jsf references): the ajv errors as
 * `path: message` lines, empty when it is valid. The schema is compiled once per test file.
 */
export function validateCycloneDx(doc: unknown): string[] {
  if (compiled === undefined) {
    const ajv = new Ajv({ strict: true, strictRequired: false, allErrors: true });
    addFormats(ajv);
    ajv.addFormat('iri-reference', iriReference);
    ajv.addFormat('idn-email', idnEmail);
    ajv.addKeyword('meta:enum');
    const [bom, ...refs] = CYCLONEDX_SCHEMAS.map((f) => loadVector(f) as Record<string, unknown>);
    for (const r of refs) ajv.addSchema(r);
    compiled = ajv.compile(bom);
  }
  if (compiled(doc)) return [];
  return (compiled.errors ?? []).map((e) => `${e.instancePath || '/'}: ${e.message} ${JSON.stringify(e.params)}`);
}
