#!/usr/bin/env node
// The `pqdb` command (see `pqdb --help`); the implementation is src/cli.ts, built into dist/.
import { main } from '../dist/cli.js';

process.exitCode = await main(process.argv.slice(2));
