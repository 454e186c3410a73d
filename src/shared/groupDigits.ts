/**
 * An integer with its thousands comma-separated, as `toLocaleString('en-US')` writes it, without ICU: the CLI's help
 * text is built as its modules load, and formatting a number there through ICU mapped about 5 MB of its data into every
 * process, `locklens serve` among them (docs/BENCHMARKS.md, serve, the seventh round).
 */
export function groupDigits(n: number): string {
  return String(Math.trunc(n)).replace(/\B(?=(\d{3})+$)/g, ',');
}
