/** What test/vscode/suite/index.ts writes to LOCKLENS_TEST_RESULT after a mocha run in the extension host. */
export interface SuiteResult {
  readonly passed: number;
  readonly failed: number;
  readonly pending: number;
  readonly tests: readonly TestResult[];
}

export interface TestResult {
  readonly title: string;
  /** Suite titles and the test title, space-separated (mocha's fullTitle()). */
  readonly fullTitle: string;
  readonly state: 'passed' | 'failed' | 'pending';
  /** The failure's message and stack. */
  readonly error?: string;
  readonly durationMs: number;
}
