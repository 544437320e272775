import { Readable } from 'node:stream';
import { parse } from 'csv-parse/sync';
import t from 'tap';
import { csvBatches, type CsvRow } from '../../src/http/csv-body.js';

/** What the reader gives for `text` arriving in pieces cut at `cuts`. */
async function read(text: string, cuts: number[] = []): Promise<CsvRow[]> {
  const bytes = Buffer.from(text);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const at of [...cuts, bytes.length]) {
    pieces.push(bytes.subarray(from, at));
    from = at;
  }
  const out: CsvRow[] = [];
  for await (const rows of csvBatches(Readable.from(pieces))) out.push(...rows);
  return out;
}

/** csv-parse read whole with `info` (its own line count is right while no quoted cell holds `\r\n`). */
function reference(text: string): CsvRow[] {
  const recs = parse(text, {
    relax_column_count: true,
    skip_empty_lines: true,
    trim: true,
    bom: true,
    info: true,
  }) as unknown as { record: string[]; info: { lines: number } }[];
  return recs.map((x) => ({ row: x.info.lines, cells: x.record }));
}

const samples: [string, string][] = [
  ['plain rows with a header', 'name,number\nAnn,+447700900001\nBob,+447700900002\n'],
  ['CRLF and no final line end', 'a,b\r\n1,2\r\n3,4'],
  ['blank lines', '\na,b\n\n\n1,2\n\n'],
  ['BOM and trimmed cells', '\ufeff number , name \n +44 77 , Ann \n'],
  ['quoted cells with commas, escapes and line breaks', 'n,note\n1,"a, b"\n2,"say ""hi"""\n3,"two\nlines"\n4,x\n'],
  ['blanks around a quoted cell', 'a, "b c" ,d\n'],
  ['ragged rows', 'a,b,c\n1\n1,2,3,4\n'],
  ['an empty quoted cell', '"",x\n'],
  ['a CR-only file', 'a,b\r1,2\r'],
];

t.test('reads what csv-parse reads whole, however the bytes are cut', async (t) => {
  for (const [name, text] of samples) {
    const want = reference(text);
    t.same(await read(text), want, name);
    const n = Buffer.byteLength(text);
    for (let at = 0; at <= n; at++) t.same(await read(text, [at]), want, `${name}, cut at ${at}`);
  }
});

t.test('a row is the line it ends on, with CRLF inside quotes and mixed line ends', async (t) => {
  const crlf = 'a\r\n"x\r\ny",1\r\nb,2\r\n"p\r\nq\r\nr",3\r\nc,4\r\n';
  const want = [
    { row: 1, cells: ['a'] },
    { row: 3, cells: ['x\r\ny', '1'] },
    { row: 4, cells: ['b', '2'] },
    { row: 7, cells: ['p\r\nq\r\nr', '3'] },
    { row: 8, cells: ['c', '4'] },
  ];
  for (let at = 0; at <= crlf.length; at++) t.same(await read(crlf, [at]), want, `CRLF file cut at ${at}`);
  t.same(await read('a\nb\r\nc\rd\n'), [
    { row: 1, cells: ['a'] },
    { row: 2, cells: ['b'] },
    { row: 3, cells: ['c'] },
    { row: 4, cells: ['d'] },
  ]);
});

t.test('keeps a quote inside an unquoted cell and refuses what cannot be read, naming the line', async (t) => {
  t.same(await read('ab"c,d\n'), [{ row: 1, cells: ['ab"c', 'd'] }]);
  await t.rejects(read('a,"open\n1,2\n'), {
    code: 'VALIDATION_ERROR',
    message: 'The CSV file is malformed at line 3: a quote that is never closed',
  });
  await t.rejects(read('a\r\nb,"open\r\n1,2\r\n', [11]), { message: /line 4: a quote that is never closed/ });
  await t.rejects(read('a,"open'), { message: /line 1: a quote that is never closed/ });
  await t.rejects(read('"a"b,c\n'), { code: 'VALIDATION_ERROR', message: /line 1: text after a closing quote/ });
  await t.rejects(read('x\r\n"y\r\nz",1\r\n"a"b,c\n'), { message: /line 4: text after a closing quote/ });
  await t.rejects(read(`"${'x'.repeat(1_100_000)}`), { message: /line 1: a row longer than 1 MiB/ });
  await t.rejects(read(`a\nb,${'x'.repeat(1_100_000)}\n`), { message: /line 2: a row longer than 1 MiB/ });
});

t.test('streams: rows come before the file ends, multi-byte characters cut anywhere', async (t) => {
  const text = 'name,number\nZoë,+447700900001\n"Ağa, B",+447700900002\n';
  const bytes = Buffer.from(text);
  let sent = 0;
  const seenAt: number[] = [];
  async function* slowly() {
    for (const b of bytes) {
      sent++;
      yield Buffer.from([b]);
      await new Promise((r) => setImmediate(r));
    }
  }
  const rows: CsvRow[] = [];
  for await (const b of csvBatches(Readable.from(slowly()))) {
    seenAt.push(sent);
    rows.push(...b);
  }
  t.same(rows, reference(text));
  t.ok(seenAt[0]! < bytes.length, `the first row was handed over after ${seenAt[0]} of ${bytes.length} bytes`);
});

t.test('a large file comes in bounded batches and the reader stops the body when left early', async (t) => {
  function* lines() {
    for (let i = 0; i < 100; i++) {
      let s = '';
      for (let j = 0; j < 1000; j++) s += `+4470${String(i * 1000 + j).padStart(8, '0')}\n`;
      yield s;
    }
  }
  let biggest = 0;
  let n = 0;
  for await (const b of csvBatches(Readable.from(lines()))) {
    biggest = Math.max(biggest, b.length);
    n += b.length;
  }
  t.equal(n, 100_000);
  t.ok(biggest <= 2048, `batches of at most 2,048 rows (largest ${biggest})`);
  const body = Readable.from(lines());
  for await (const b of csvBatches(body)) if (b.length > 0) break;
  t.ok(body.destroyed, 'the body is destroyed once the reader is left');
});
