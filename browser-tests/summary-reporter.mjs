// Prints the closing line CI reads: `playwright: N passed, N failed, N skipped`.
// A test that errors outside a test body (a file that fails to load) counts as a failure.

export default class SummaryReporter {
  passed = 0;
  failed = 0;
  skipped = 0;
  errors = 0;

  onTestEnd(test, result) {
    if (result.retry < test.retries && (result.status === 'failed' || result.status === 'timedOut')) return;
    if (result.status === 'passed') this.passed++;
    else if (result.status === 'skipped') this.skipped++;
    else this.failed++;
  }

  onError() {
    this.errors++;
  }

  onEnd() {
    process.stdout.write(
      `\nplaywright: ${this.passed} passed, ${this.failed + this.errors} failed, ${this.skipped} skipped\n`,
    );
  }

  printsToStdio() {
    return false;
  }
}
