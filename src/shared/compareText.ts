/** Strings in the order of their UTF-16 code units (as `<` compares them), for sorts that must come out the same every time. */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
