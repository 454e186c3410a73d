/** A connection URL with any password replaced, for messages: a refused URL is exactly the one that may hold one. */
export function redact(text: string): string {
  return text.replace(/(\/\/[^/@:]*:)[^@/]*@/, '$1***@');
}
