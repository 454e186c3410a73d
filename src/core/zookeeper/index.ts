export { ZooKeeperBackend, ZOOKEEPER_CAPABILITIES } from './zookeeperBackend';
export { parseZooKeeperUrl, type ZooKeeperUrl } from './url';
export { CONVENTIONS as ZOOKEEPER_CONVENTIONS, type Convention as ZooKeeperConvention } from './conventions';
