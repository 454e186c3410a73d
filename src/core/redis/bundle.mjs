// Redis's part of the build (read by esbuild.mjs): the client libraries that only its store bundle may hold.
export const clients = ['ioredis', 'redis-parser', 'cluster-key-slot'];
