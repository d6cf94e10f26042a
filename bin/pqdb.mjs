#!/usr/bin/env node
// The `pqdb` command (see `pqdb --help`); the implementation is src/cli/, built into dist/cli.js.
import { main } from '../dist/cli.js';

process.exitCode = await main(process.argv.slice(2));
