import { readFileSync } from 'node:fs';
import { AppError } from '../http/errors.js';
import { parseInventoryCsv } from '../modules/numbers/inventory.js';
import { CliUsageError, registerCommand } from './commands.js';

// Operator commands of the phone-number store (issue 22).

registerCommand({
  words: ['number', 'import'],
  summary: 'list numbers for sale from a CSV file (the columns of POST /dids/inventory/upload); all or nothing',
  options: {
    email: { type: 'string', required: true, description: 'the seller account (the operator lists its own stock)' },
    file: { type: 'string', required: true, description: 'CSV file with a header row' },
  },
  async run(ctx, o) {
    const account = await ctx.services.accounts.repo.byEmail(String(o['email']));
    if (!account) throw new CliUsageError(`no account with e-mail ${String(o['email'])}`);
    let text: string;
    try {
      text = readFileSync(String(o['file']), 'utf8');
    } catch (err) {
      throw new CliUsageError(`cannot read ${String(o['file'])}: ${(err as Error).message}`);
    }
    try {
      const { items, lines } = parseInventoryCsv(text);
      // svcctl speaks for the operator: the seller needs no approved listing request.
      const r = await ctx.services.numbers.inventory.importItems(account.id, true, items, (i) => `line ${lines[i]!}`);
      return { ...r };
    } catch (err) {
      // Every bad row named, one a line, as the upload's details.
      if (err instanceof AppError && Array.isArray(err.details))
        throw new CliUsageError([err.message, ...err.details.map((x) => `  ${x.path}: ${x.message}`)].join('\n'));
      throw err;
    }
  },
  render: (r) =>
    `imported ${String(r['imported'])} numbers into ${(r['groups'] as unknown[]).length} catalogue group(s)`,
});
