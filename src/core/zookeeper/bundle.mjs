// ZooKeeper's part of the build (read by esbuild.mjs): the client library that only its store bundle may hold.
export const clients = ['node-zookeeper-client'];
