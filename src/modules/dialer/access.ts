import type { Principal } from '../../http/access.js';
import { AppError } from '../../http/errors.js';
import type { CampaignsService } from './campaigns.js';

/**
 * The caller's campaign, 404 when not its own. A test key changes only test campaigns (spec
 * "Campaign": a test campaign is simulated; a live one must not be touched by test credentials).
 */
export function campaignAccess(campaigns: CampaignsService) {
  return async (p: Principal, id: string, write: boolean) => {
    const c = await campaigns.mustGet(p.accountId, id);
    if (write && p.mode === 'test' && c.environment === 'live') {
      throw new AppError('TEST_KEY_NOT_ALLOWED', 'A test key cannot change a live campaign');
    }
    return c;
  };
}
