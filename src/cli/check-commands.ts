import { registerCommand } from './commands.js';

// The operator's public self-answering test lines that route checks call (spec "Route checks", rule 1).

registerCommand({
  words: ['test-line', 'add'],
  summary: 'register a self-answering test line for route checks',
  options: {
    number: { type: 'string', required: true, description: 'E.164 number of the line' },
    country: { type: 'string', required: true, description: 'ISO 3166 alpha-2 country, e.g. GB' },
    'line-type': { type: 'string', required: true, description: 'fixed or mobile' },
    label: { type: 'string', description: 'what the line is' },
  },
  async run(ctx, o) {
    const l = await ctx.services.routeChecks.addTestLine({
      number: String(o['number']),
      country: String(o['country']).toUpperCase(),
      lineType: String(o['line-type']),
      label: typeof o['label'] === 'string' ? o['label'] : null,
    });
    return { id: l.id, number: `+${l.number}`, country: l.country, lineType: l.lineType, label: l.label };
  },
  render: (r) =>
    `test line ${String(r['number'])} (${String(r['country'])}, ${String(r['lineType'])}) ${String(r['id'])}`,
});

registerCommand({
  words: ['test-line', 'list'],
  summary: 'list the route-check test lines',
  options: {},
  async run(ctx) {
    const lines = await ctx.services.routeChecks.testLines();
    return {
      lines: lines.map((l) => ({
        id: l.id,
        number: `+${l.number}`,
        country: l.country,
        lineType: l.lineType,
        label: l.label,
      })),
    };
  },
  render: (r) =>
    (r['lines'] as { id: string; number: string; country: string; lineType: string; label: string | null }[])
      .map((l) => `${l.number}\t${l.country}\t${l.lineType}\t${l.id}${l.label ? `\t${l.label}` : ''}`)
      .join('\n') || 'no test lines',
});

registerCommand({
  words: ['test-line', 'remove'],
  summary: 'remove a route-check test line by id or number',
  options: { line: { type: 'string', required: true, description: 'the line id or its E.164 number' } },
  async run(ctx, o) {
    const l = await ctx.services.routeChecks.removeTestLine(String(o['line']));
    return { id: l.id, number: `+${l.number}` };
  },
  render: (r) => `removed test line ${String(r['number'])}`,
});

// The caller-ID test handsets: numbers hosted on this exchange that tests call through a route.

registerCommand({
  words: ['handset', 'add'],
  summary: 'register a caller-ID test handset (a number whose calls arrive at this exchange)',
  options: {
    number: { type: 'string', required: true, description: 'E.164 number of the handset' },
    country: { type: 'string', required: true, description: 'ISO 3166 alpha-2 country, e.g. GB' },
    label: { type: 'string', description: 'what the handset is' },
  },
  async run(ctx, o) {
    const h = await ctx.services.cliTests.addHandset({
      number: String(o['number']),
      country: String(o['country']).toUpperCase(),
      label: typeof o['label'] === 'string' ? o['label'] : null,
    });
    return { id: h.id, number: `+${h.number}`, country: h.country, label: h.label };
  },
  render: (r) => `handset ${String(r['number'])} (${String(r['country'])}) ${String(r['id'])}`,
});

registerCommand({
  words: ['handset', 'list'],
  summary: 'list the caller-ID test handsets',
  options: {},
  async run(ctx) {
    const handsets = await ctx.services.cliTests.handsets();
    return {
      handsets: handsets.map((h) => ({ id: h.id, number: `+${h.number}`, country: h.country, label: h.label })),
    };
  },
  render: (r) =>
    (r['handsets'] as { id: string; number: string; country: string; label: string | null }[])
      .map((h) => `${h.number}\t${h.country}\t${h.id}${h.label ? `\t${h.label}` : ''}`)
      .join('\n') || 'no handsets',
});

registerCommand({
  words: ['handset', 'remove'],
  summary: 'remove a caller-ID test handset by id or number',
  options: { handset: { type: 'string', required: true, description: 'the handset id or its E.164 number' } },
  async run(ctx, o) {
    const h = await ctx.services.cliTests.removeHandset(String(o['handset']));
    return { id: h.id, number: `+${h.number}` };
  },
  render: (r) => `removed handset ${String(r['number'])}`,
});
