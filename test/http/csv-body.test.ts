import { Readable } from 'node:stream';
import { parse } from 'csv-parse/sync';
import t from 'tap';
import { csvBatches, CsvReader, type CsvRow } from '../../src/http/csv-body.js';

/** What the reader gives for `text` fed in pieces cut at `cuts`. */
function read(text: string, cuts: number[] = []): CsvRow[] {
  const r = new CsvReader();
  const out: CsvRow[] = [];
  let from = 0;
  for (const at of [...cuts, text.length]) {
    r.push(text.slice(from, at), out);
    from = at;
  }
  r.end(out);
  return out;
}

/** csv-parse, the library the reader replaced, with the options the imports used. */
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

t.test('reads what csv-parse read, however the text is cut', async (t) => {
  for (const [name, text] of samples) {
    const want = reference(text);
    t.same(read(text), want, name);
    for (let at = 0; at <= text.length; at++) t.same(read(text, [at]), want, `${name}, cut at ${at}`);
  }
});

t.test('keeps a quote inside an unquoted cell and refuses what cannot be read', async (t) => {
  t.same(read('ab"c,d\n'), [{ row: 1, cells: ['ab"c', 'd'] }]);
  t.throws(() => read('a,"open\n1,2\n'), { code: 'VALIDATION_ERROR', message: /line 3: a quote that is never closed/ });
  t.throws(() => read('"a"b,c\n'), { code: 'VALIDATION_ERROR', message: /line 1: text after a closing quote/ });
  t.throws(() => read(`"${'x'.repeat(1_100_000)}`), { message: /longer than 1 MiB/ });
});

t.test('streams: rows come in batches as bytes arrive, multi-byte characters cut anywhere', async (t) => {
  const text = 'name,number\nZoë,+447700900001\n"Ağa, B",+447700900002\n';
  const bytes = Buffer.from(text);
  const chunks = Array.from(bytes, (b) => Buffer.from([b]));
  const rows: CsvRow[] = [];
  let batches = 0;
  for await (const b of csvBatches(Readable.from(chunks))) {
    batches++;
    rows.push(...b);
  }
  t.same(rows, reference(text));
  t.equal(batches, 3, 'one batch per row here: each row ended in its own chunk');
});
