// etcd's part of the build (read by esbuild.mjs): the client libraries that only its store bundle may hold, and the
// esbuild plugins that bundle needs.
import { cpSync, readFileSync } from 'node:fs';

export const clients = ['etcd3', '@grpc', 'protobufjs', '@protobufjs', 'long'];

/**
 * etcd3 reads its .proto files at run time from `${__dirname}/../proto`. In dist/stores/etcd.js __dirname is
 * dist/stores, so `../proto` is dist/proto: copy the three files there.
 */
const etcd3Protos = {
  name: 'etcd3-protos',
  setup(build) {
    build.onLoad({ filter: /etcd3[\\/]lib[\\/]connection-pool\.js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      const inStores = build.initialOptions.outdir?.endsWith('stores');
      const patched = source.replace('`${__dirname}/../proto/rpc.proto`', inStores ? '`${__dirname}/../proto/rpc.proto`' : '`${__dirname}/proto/rpc.proto`');
      if (!source.includes('`${__dirname}/../proto/rpc.proto`')) throw new Error('etcd3-protos: proto path not found in etcd3; update the plugin for this etcd3 version');
      return { contents: patched, loader: 'js' };
    });
    build.onEnd(() => cpSync('node_modules/etcd3/proto', 'dist/proto', { recursive: true }));
  },
};

export const plugins = [etcd3Protos];
