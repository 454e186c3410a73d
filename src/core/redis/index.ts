export { RedisBackend, REDIS_CAPABILITIES } from './redisBackend';
export { parseRedisEndpoint, type RedisEndpoint } from './endpoints';
export { CONVENTIONS as REDIS_CONVENTIONS } from './recognize';
