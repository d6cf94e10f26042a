// What every pqdb verb declares — its synopsis, help text, positionals and options — and the parser
// index.ts runs them through: a verb's own options plus --json, --progress and --help, strict (an
// unknown option or a wrong count of positionals is one usage line). A group of verbs (`pqdb policy
// sign|set|show`) is named by its first word; each of its verbs is named by both. Node only.

/// <reference types="node" />
import { parseArgs } from 'node:util';
import type { Keys } from './_keys';
import { UsageError } from './_report';

/** One option of a verb, as node:util parseArgs takes it. */
export interface OptionSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  short?: string;
}

/** The parsed command line a verb runs with. */
export interface VerbArgs {
  positionals: string[];
  values: Record<string, string | boolean | string[] | undefined>;
  /** The keys the verb's key options named (index.ts wipes them after the verb). */
  keys: Keys;
  /** Progress bars wanted: stderr is a terminal or --progress was given, and not --json. */
  progress: boolean;
}

export interface Verb {
  name: string;
  /** `<location> <collection> …`: what follows the verb in the usage line. */
  synopsis: string;
  /** One line for `pqdb --help`. */
  summary: string;
  /** The lines `pqdb <verb> --help` prints after the usage line. */
  help: string;
  /** How many positionals the verb takes. */
  positionals: { min: number; max: number };
  options: Record<string, OptionSpec>;
  run(args: VerbArgs): Promise<number>;
}

/** Verbs under one command word: `pqdb <group> <verb> …`; each verb's name is `<group> <verb>`. */
export interface VerbGroup {
  name: string;
  /** One line for `pqdb --help`. */
  summary: string;
  /** The lines `pqdb <group> --help` prints after its verbs' usage lines. */
  help: string;
  verbs: readonly Verb[];
}

/** The options every verb has. */
export const COMMON_OPTIONS: Record<string, OptionSpec> = {
  json: { type: 'boolean' },
  progress: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

/** The key options; a verb lists those it reads. */
export const KEY_OPTIONS = {
  unlock: { type: 'string' },
  signer: { type: 'string' },
  'signer-public': { type: 'string' },
} as const satisfies Record<string, OptionSpec>;

/** `usage: pqdb <verb> <synopsis>` and the verb's help text. */
export function verbUsage(verb: Verb): string {
  return `usage: pqdb ${verb.name} ${verb.synopsis}\n\n${verb.help}`;
}

/** `usage: pqdb <group> a|b|c …`, each verb's usage line and summary, and the group's help text. */
export function groupUsage(group: VerbGroup): string {
  const words = group.verbs.map((v) => v.name.slice(group.name.length + 1));
  const lines = group.verbs.map((v) => `  pqdb ${v.name} ${v.synopsis}\n      ${v.summary}`);
  return `usage: pqdb ${group.name} ${words.join('|')} …\n\n${lines.join('\n')}\n\n${group.help}`;
}

/**
 * Parses `argv` (what follows the verb) against the verb's options.
 * @throws UsageError for an unknown option, a missing option value or a wrong count of positionals.
 * @example
 * const { values, positionals } = parseVerb(put, ['./store', 'words', 'w1', '{}']);
 */
export function parseVerb(
  verb: Verb,
  argv: string[],
): { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] } {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: { ...verb.options, ...COMMON_OPTIONS },
    });
  } catch (e) {
    throw new UsageError(parseArgsMessage(e as Error & { code?: string }), { cause: e });
  }
  const { positionals } = parsed;
  const values = parsed.values as VerbArgs['values'];
  if (values.help === true) return { values, positionals };
  const { min, max } = verb.positionals;
  if (positionals.length < min || positionals.length > max) {
    const names = verb.synopsis
      .split(' ')
      .filter((w) => w.startsWith('<'))
      .join(' ');
    throw new UsageError(
      positionals.length > max
        ? `unexpected argument "${positionals[max]}"`
        : `missing ${names
            .split(' ')
            .slice(positionals.length, Math.max(min, positionals.length + 1))
            .join(' ')}`,
    );
  }
  return { values, positionals };
}

/** parseArgs' messages, shortened to one clause. */
function parseArgsMessage(e: Error & { code?: string }): string {
  const m = e.message;
  if (e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const name = /'([^']+)'/.exec(m)?.[1] ?? m;
    return `unknown option ${name}`;
  }
  if (e.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    const name = /Option '(?:-\w, )?(--[^ ']+)/.exec(m)?.[1];
    return name !== undefined
      ? `option ${name} ${m.includes('argument missing') ? 'needs a value' : 'takes no value'}`
      : m;
  }
  return m.split('\n')[0];
}

/** A string option's value (the last when given more than once), or undefined. */
export function str(values: VerbArgs['values'], name: string): string | undefined {
  const v = values[name];
  if (Array.isArray(v)) return v.at(-1);
  return typeof v === 'string' ? v : undefined;
}

/**
 * A whole-number option: undefined when absent.
 * @throws UsageError when it is not a whole number of at least `min`.
 */
export function whole(values: VerbArgs['values'], name: string, min = 1): number | undefined {
  const v = str(values, name);
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v) || Number(v) < min || !Number.isSafeInteger(Number(v)))
    throw new UsageError(`--${name} expected a whole number of at least ${min}, got "${v}"`);
  return Number(v);
}
