// Being built (issue 12): replaced by the real backend.
import type { LockBackend } from '../backend';
import { LockLensError } from '../errors';
import type { ConnectionProfile } from '../profile';

export class MysqlBackend {
  static open(_profile: ConnectionProfile): Promise<LockBackend> {
    return Promise.reject(new LockLensError('NOT_INSTALLED', 'MySQL support is being built'));
  }
}
