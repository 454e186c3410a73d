// PostgreSQL's part of the build (read by esbuild.mjs): the client libraries that only its store bundle may hold.
export const clients = ['pg', 'pg-[a-z-]+', 'pgpass', 'postgres-[a-z-]+'];
