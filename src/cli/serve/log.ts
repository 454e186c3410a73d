/**
 * serve's log: one JSON object a line on stdout (`{"time","level","msg",...}`), for journald and log shippers. What is
 * logged is chosen by the caller: connection names, stores, endpoints, states and errors, never a secret (the config
 * refuses them where they could be logged: an endpoint URL with a password).
 */
export type Level = 'info' | 'warn' | 'error';

export type Log = (level: Level, msg: string, fields?: Readonly<Record<string, unknown>>) => void;

export function jsonLog(write: (line: string) => void = (line) => process.stdout.write(line + '\n'), now: () => Date = () => new Date()): Log {
  return (level, msg, fields = {}) => write(JSON.stringify({ time: now().toISOString(), level, msg, ...fields }));
}
