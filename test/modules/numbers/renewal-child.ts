import pino from 'pino';
import { connect } from '../../../src/db/connection.js';
import { createLedger } from '../../../src/ledger/ledger.js';
import { createRenewals } from '../../../src/modules/numbers/renewals.js';

// A renewal run in its own process, at a fixed time, that the crash test kills mid-run.
const [url, at] = process.argv.slice(2) as [string, string];
const log = pino({ level: 'silent' });
const clock = { now: () => new Date(at) };
const sql = connect({ url, max: 2, log, applicationName: 'renewal-child' });
const ledger = createLedger({ sql, clock, log });
const renewals = createRenewals({ sql, clock, log, ledger, platformFeePercent: '10', batch: 50 });
process.stdout.write('running\n');
await renewals.run();
await sql.end({ timeout: 1 });
process.stdout.write('done\n');
