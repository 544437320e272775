import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { startTestDaemon } from '../../helpers/daemon.js';
import { signIn } from '../../helpers/sessions.js';

const pdf = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');
const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(64, 7)]);
const exe = Buffer.concat([Buffer.from('MZ'), Buffer.alloc(64, 0x90)]);

t.test('KYC: details, documents, submit, operator review, the KYC_REQUIRED gate', async (t) => {
  const d = await startTestDaemon(t, { compliance: { enforce_kyc: true, max_document_bytes: 4096, max_documents: 3 } });
  const user = await signIn(d, 'kyc@example.test');
  const op = await signIn(d, 'ops@example.test', 'admin');
  const compliance = d.modules.services.compliance;

  const empty = await d.https('GET', '/compliance/kyc', { token: user.token });
  t.equal(empty.status, 200);
  t.match(empty.json.data, { accountId: user.accountId, status: 'unverified', documents: [] });
  t.equal(await compliance.isVerified(user.accountId), false);
  await t.rejects(compliance.requireVerified(user.accountId), { code: 'KYC_REQUIRED', status: 403 });

  const early = await d.https('PUT', '/compliance/kyc', { token: user.token, body: { submit: true } });
  t.equal(early.json.error.code, 'VALIDATION_ERROR');
  t.ok(
    early.json.error.details.some((x: { path: string }) => x.path === 'legalName'),
    'names each missing field',
  );

  const details = {
    subjectType: 'individual',
    legalName: 'Alice Example',
    countryCode: 'DE',
    address: '1 Main Street, Berlin',
    dateOfBirth: '1990-04-01',
  };
  const saved = await d.https('PUT', '/compliance/kyc', { token: user.token, body: details });
  t.match(saved.json.data, { ...details, status: 'unverified' });
  const noDocs = await d.https('PUT', '/compliance/kyc', { token: user.token, body: { submit: true } });
  t.match(noDocs.json.error, { code: 'VALIDATION_ERROR', message: /document/ });

  const upload = (bytes: Buffer, kind = 'passport', fileName = 'passport.pdf', token = user.token) =>
    d.https('POST', '/compliance/kyc/documents', {
      token,
      body: { kind, fileName, contentBase64: bytes.toString('base64') },
    });
  const refusedType = await upload(exe, 'passport', 'passport.pdf');
  t.equal(refusedType.json.error.code, 'VALIDATION_ERROR', 'an executable named .pdf is refused by its bytes');
  const tooBig = await upload(Buffer.concat([pdf, Buffer.alloc(5000, 0x20)]));
  t.match(tooBig.json.error.details[0].message, /4096 bytes/);
  t.equal(
    (
      await d.https('POST', '/compliance/kyc/documents', {
        token: user.token,
        body: { kind: 'passport', fileName: 'x', contentBase64: 'not base64!' },
      })
    ).json.error.code,
    'VALIDATION_ERROR',
  );
  const doc = await upload(pdf, 'passport', '../../etc/passport "scan".pdf');
  t.equal(doc.status, 201);
  t.match(doc.json.data, {
    kind: 'passport',
    fileName: 'passport scan.pdf',
    contentType: 'application/pdf',
    sizeBytes: pdf.length,
  });
  const doc2 = await upload(png, 'proof_of_address', 'bill.png');
  t.equal(doc2.json.data.contentType, 'image/png');
  const stored = readdirSync(join(d.config.paths.state, 'kyc', user.accountId));
  t.same(stored.sort(), [doc.json.data.id, doc2.json.data.id].sort(), 'files kept under <state>/kyc/<account>/ by id');

  const key = await d.modules.services.keys.create(user.accountId, { mode: 'live' });
  t.equal((await upload(pdf, 'other', 'a.pdf', key.secret)).status, 403, 'uploads need a dashboard session');
  t.equal(
    (await d.https('GET', '/compliance/kyc', { token: key.secret })).json.data.documents.length,
    2,
    'a key reads with account:read',
  );

  const dl = await d.https('GET', `/compliance/kyc/documents/${doc.json.data.id}`, { token: user.token });
  t.equal(dl.status, 200);
  t.equal(dl.headers['content-type'], 'application/pdf');
  t.equal(dl.text, pdf.toString('utf8'));
  const stranger = await signIn(d, 'stranger@example.test');
  t.equal(
    (await d.https('GET', `/compliance/kyc/documents/${doc.json.data.id}`, { token: stranger.token })).status,
    404,
  );

  const submitted = await d.https('PUT', '/compliance/kyc', { token: user.token, body: { submit: true } });
  t.match(submitted.json.data, { status: 'pending', submittedAt: String });
  t.equal((await upload(pdf)).json.error.code, 'CONFLICT', 'no changes while pending');
  t.equal(
    (await d.https('PUT', '/compliance/kyc', { token: user.token, body: { legalName: 'Other Name' } })).json.error.code,
    'CONFLICT',
  );

  t.equal((await d.https('GET', '/compliance/reviews', { token: user.token })).status, 403, 'operators only');
  const queue = await d.https('GET', '/compliance/reviews', { token: op.token });
  t.equal(queue.status, 200);
  t.equal(queue.json.data.length, 1);
  t.match(queue.json.data[0], { id: user.accountId, email: 'kyc@example.test', status: 'pending' });
  t.equal(queue.json.data[0].documents.length, 2);
  t.equal(
    (await d.https('GET', `/compliance/kyc/documents/${doc2.json.data.id}`, { token: op.token })).status,
    200,
    'an operator reads documents',
  );

  const noReason = await d.https('POST', `/compliance/reviews/${user.accountId}`, {
    token: op.token,
    body: { decision: 'reject' },
  });
  t.equal(noReason.json.error.code, 'VALIDATION_ERROR');
  const rejected = await d.https('POST', `/compliance/reviews/${user.accountId}`, {
    token: op.token,
    body: { decision: 'reject', reason: 'The address does not match the bill' },
  });
  t.match(rejected.json.data, { status: 'rejected', rejectionReason: 'The address does not match the bill' });
  t.equal(
    (await d.https('POST', `/compliance/reviews/${user.accountId}`, { token: op.token, body: { decision: 'approve' } }))
      .json.error.code,
    'CONFLICT',
    'only pending ones',
  );

  t.equal(
    (
      await d.https('PUT', '/compliance/kyc', {
        token: user.token,
        body: { address: '2 Main Street, Berlin', submit: true },
      })
    ).json.data.status,
    'pending',
    'corrected and sent again',
  );
  const approved = await d.https('POST', `/compliance/reviews/${user.accountId}`, {
    token: op.token,
    body: { decision: 'approve' },
  });
  t.match(approved.json.data, { status: 'verified', rejectionReason: null });
  t.equal(await compliance.isVerified(user.accountId), true);
  await t.resolves(compliance.requireVerified(user.accountId));
  t.equal((await d.https('GET', '/compliance/reviews?status=verified', { token: op.token })).json.data.length, 1);

  const events = await d.sql<
    { event: string }[]
  >`select event from events where account_id = ${user.accountId} order by id`;
  t.same(
    events.map((e) => e.event),
    ['kyc.rejected', 'kyc.verified'],
  );
  t.notOk(existsSync(join(d.config.paths.state, 'kyc', stranger.accountId)));
});

t.test('without enforcement the gate lets everyone through', async (t) => {
  const d = await startTestDaemon(t);
  const user = await signIn(d, 'free@example.test');
  await t.resolves(d.modules.services.compliance.requireVerified(user.accountId));
  t.equal(await d.modules.services.compliance.isVerified(user.accountId), false);
});
