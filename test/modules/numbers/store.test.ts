import t from 'tap';
import { startTestDaemon } from '../../helpers/daemon.js';
import { account, api, numbers } from './world.js';

t.test('listing request, operator approval, inventory import and every catalogue read', async (t) => {
  const d = await startTestDaemon(t);
  const op = await account(d, 'operator@example.com', { operator: true });
  const seller = await account(d, 'seller@example.com');
  const buyer = await account(d, 'buyer@example.com');

  // Not a seller yet: listing numbers is refused.
  const early = await api(d, 'POST', '/dids/inventory/numbers', seller.key, { items: numbers(1) });
  t.equal(early.status, 403);

  // The listing request: validation names the first bad field in error.field.
  const bad = await api(d, 'POST', '/dids/listing-request', seller.key, {
    contactName: '',
    contactEmail: 'not-an-email',
    notes: 'x',
  });
  t.equal(bad.status, 400);
  t.equal(bad.json.error.code, 'VALIDATION_ERROR');
  t.equal(bad.json.error.field, 'contactName', 'first bad field in body order');
  t.notOk(bad.json.error.details);
  const unknown = await api(d, 'POST', '/dids/listing-request', seller.key, { contactName: 'Ann', color: 'red' });
  t.equal(unknown.json.error.field, 'color');

  const none = await api(d, 'GET', '/dids/listing-request', seller.key);
  t.equal(none.status, 200);
  t.same(none.json.data.request, null);
  t.equal(none.json.data.prefill.contactEmail, 'seller@example.com');

  const req = await api(d, 'POST', '/dids/listing-request', seller.key, {
    companyName: 'Numbers Ltd',
    contactName: 'Ann Seller',
    contactEmail: 'ann@example.com',
    didCount: 500,
    countries: 'GB, DE',
  });
  t.equal(req.status, 201, JSON.stringify(req.json));
  t.equal(req.json.data.status, 'pending');
  const again = await api(d, 'POST', '/dids/listing-request', seller.key, { contactName: 'Ann Seller' });
  t.equal(again.status, 409, 'one open request at a time');
  const mine = await api(d, 'GET', '/dids/listing-request', seller.key);
  t.match(mine.json.data, {
    ownedActiveDids: 0,
    request: { id: req.json.data.id, status: 'pending', didCount: 500, reviewedAt: null },
    prefill: { companyName: 'Numbers Ltd', contactName: 'Ann Seller', contactEmail: 'ann@example.com' },
  });

  // Only the operator reviews.
  t.equal((await api(d, 'GET', '/dids/listing-requests', seller.key)).status, 403);
  const queue = await api(d, 'GET', '/dids/listing-requests?status=pending', op.key);
  t.equal(queue.json.data.length, 1);
  t.equal(queue.json.data[0].companyName, 'Numbers Ltd');
  const approved = await api(d, 'POST', `/dids/listing-requests/${req.json.data.id}/approve`, op.key, { note: 'ok' });
  t.equal(approved.status, 200, JSON.stringify(approved.json));
  t.equal(approved.json.data.status, 'approved');
  t.equal((await api(d, 'POST', `/dids/listing-requests/${req.json.data.id}/reject`, op.key, {})).status, 409);
  const [ev] = await d.sql<{ data: { status: string } }[]>`
    select data from events where account_id = ${seller.id} and event = 'number.listing_request.reviewed'`;
  t.equal(ev?.data.status, 'approved', 'the seller is told through its outbox');

  // CSV upload: every bad row named, nothing imported.
  const header = 'number,country_code,country,country_prefix,type,city,area_prefix,channels,setup_price,monthly_price';
  const badCsv = [
    header,
    '442070000001,GB,United Kingdom,44,local,London,20,2,1.000000,2.000000',
    '44207,GB,United Kingdom,44,local,London,20,2,1.000000,2.000000',
    '442070000003,GB,United Kingdom,44,premium,London,20,2,1.000000,2.000000',
    '442070000001,GB,United Kingdom,44,local,London,20,2,1.000000,-2',
    '331070000005,GB,United Kingdom,44,local,London,20,0,1.0000001,2.000000',
  ].join('\n');
  const refused = await api(d, 'POST', '/dids/inventory/upload', seller.key, { csv: badCsv });
  t.equal(refused.status, 400);
  const paths = refused.json.error.details.map((x: { path: string }) => x.path);
  t.ok(paths.includes('lines[3].number'), 'too short');
  t.ok(paths.includes('lines[4].type'), 'unknown type');
  t.ok(paths.includes('lines[5].number'), 'repeats line 2');
  t.ok(paths.includes('lines[5].monthlyPrice'), 'negative price');
  t.ok(paths.includes('lines[6].channels'));
  t.ok(paths.includes('lines[6].setupPrice'), 'seven decimals');
  t.ok(paths.includes('lines[6].number'), 'not under the dialling prefix');
  t.notOk(
    paths.some((p: string) => p.startsWith('lines[2]')),
    'the good row is not named',
  );
  t.match(refused.json.error.message, /4 row\(s\) refused/);
  const [count0] = await d.sql<{ n: number }[]>`select count(*)::int as n from did_numbers`;
  t.equal(count0?.n, 0, 'all or nothing');

  const goodCsv = [
    header,
    ...numbers(3, { first: 3141592 }).map(
      (r) => `${r.number},GB,United Kingdom,44,local,London,20,2,${r.setupPrice},${r.monthlyPrice}`,
    ),
    '4420755550000,GB,United Kingdom,44,local,London,20,2,1.500000,2.250000',
    '4420712345678,GB,United Kingdom,44,local,London,20,2,1.500000,2.250000',
  ].join('\n');
  const uploaded = await api(d, 'POST', '/dids/inventory/upload', seller.key, { csv: goodCsv });
  t.equal(uploaded.status, 201, JSON.stringify(uploaded.json));
  t.equal(uploaded.json.data.imported, 5);

  // API import: a second group (Manchester, more expensive) and a mobile group in Germany.
  const api2 = await api(d, 'POST', '/dids/inventory/numbers', seller.key, {
    items: [
      ...numbers(2, { areaPrefix: '161', city: 'Manchester', monthlyPrice: '3.000000', setupPrice: '0.500000' }),
      ...numbers(2, {
        countryCode: 'DE',
        country: 'Germany',
        countryPrefix: '49',
        areaPrefix: '151',
        city: null,
        typeId: 'mobile',
        monthlyPrice: '5.000000',
        setupPrice: '0.000000',
      }),
    ],
  });
  t.equal(api2.status, 201, JSON.stringify(api2.json));
  t.equal(api2.json.data.groups.length, 2);
  const dup = await api(d, 'POST', '/dids/inventory/numbers', seller.key, { items: numbers(1, { first: 3141592 }) });
  t.equal(dup.status, 400);
  t.same(dup.json.error.details, [{ path: 'items[0].number', message: 'is already listed' }]);
  const wrongPrefix = await api(d, 'POST', '/dids/inventory/numbers', seller.key, {
    items: [{ ...numbers(1)[0]!, countryPrefix: '45', number: '45201234567' }],
  });
  t.same(wrongPrefix.json.error.details, [{ path: 'items[0].countryPrefix', message: 'GB dials 44' }]);

  // svcctl-style import by the operator through the service (the command calls the same function).
  const byOperator = await d.modules.services.numbers.inventory.importItems(
    op.id,
    true,
    numbers(1, {
      countryCode: 'US',
      country: 'United States',
      countryPrefix: '1',
      areaPrefix: '800',
      city: null,
      typeId: 'toll_free',
      monthlyPrice: '1.000000',
    }),
    (i) => `items[${i}]`,
  );
  t.equal(byOperator.imported, 1);

  // Catalogue reads.
  const cat = await api(d, 'GET', '/dids/catalog', buyer.key);
  t.equal(cat.status, 200);
  t.equal(cat.json.data.total, 4);
  t.same(
    cat.json.data.groups.map((g: { skus: { monthlyPrice: number }[] }) => g.skus[0]!.monthlyPrice),
    [1, 2.25, 3, 5],
    'cheapest monthly first by default',
  );
  const london = cat.json.data.groups[1];
  t.match(london, {
    country: 'United Kingdom',
    countryPrefix: '44',
    city: 'London',
    areaPrefix: '20',
    typeId: 'local',
    typeName: 'Local',
    available: 5,
    skus: [{ channels: 2, setupPrice: 1.5, monthlyPrice: 2.25 }],
  });
  const desc = await api(d, 'GET', '/dids/catalog?sort=monthly_desc', buyer.key);
  t.equal(desc.json.data.groups[0].countryCode, 'DE');
  const setup = await api(d, 'GET', '/dids/catalog?sort=setup_asc', buyer.key);
  t.same(
    setup.json.data.groups.map((g: { skus: { setupPrice: number }[] }) => g.skus[0]!.setupPrice),
    [0, 0.5, 1.5, 1.5],
  );
  const loc = await api(d, 'GET', '/dids/catalog?sort=location_asc', buyer.key);
  t.same(
    loc.json.data.groups.map((g: { country: string }) => g.country),
    ['Germany', 'United Kingdom', 'United Kingdom', 'United States'],
  );
  const cheap = await api(d, 'GET', '/dids/catalog?maxMonthly=2.5', buyer.key);
  t.equal(cheap.json.data.total, 2);
  const byText = await api(d, 'GET', '/dids/catalog?search=manch', buyer.key);
  t.equal(byText.json.data.groups[0].city, 'Manchester');
  const byDigits = await api(d, 'GET', '/dids/catalog?search=4916', buyer.key);
  t.equal(byDigits.json.data.total, 0);
  const byDial = await api(d, 'GET', '/dids/catalog?search=44161', buyer.key);
  t.equal(byDial.json.data.groups[0].areaPrefix, '161', 'digits match the start of the dialling prefix');
  const countries = await api(d, 'GET', '/dids/catalog/countries', buyer.key);
  t.same(
    countries.json.data.map((c: { countryPrefix: string }) => c.countryPrefix),
    ['49', '44', '1'],
  );
  const de = countries.json.data[0].countryId;
  t.not(de, 'DE', 'a catalogue id, not an ISO code');
  const deOnly = await api(d, 'GET', `/dids/catalog?countryId=${de}`, buyer.key);
  t.equal(deOnly.json.data.groups.length, 1);
  const types = await api(d, 'GET', '/dids/catalog/types', buyer.key);
  t.same(types.json.data[0], { id: 'local', name: 'Local' });
  const mobile = await api(d, 'GET', '/dids/catalog?typeId=mobile', buyer.key);
  t.equal(mobile.json.data.groups[0].countryCode, 'DE');
  const page2 = await api(d, 'GET', '/dids/catalog?page=2', buyer.key);
  t.same(page2.json.data, { groups: [], total: 4, page: 2 });

  // Search by pattern on the local part.
  const search = (q: string) => api(d, 'GET', `/dids/search?${q}`, buyer.key);
  const starts = await search('pattern=7555&match=starts_with');
  t.same(
    starts.json.data.hits.map((h: { number: string }) => h.number),
    ['4420755550000'],
  );
  t.equal(starts.json.data.hits[0].dialingPrefix, '4420');
  t.same(starts.json.hits, starts.json.data.hits, 'deprecated top-level copy');
  t.equal(starts.json.scannedPages, 1);
  t.equal(starts.json.truncated, false);
  const ends = await search('pattern=7462&match=ends_with');
  t.same(
    ends.json.data.hits.map((h: { number: string }) => h.number),
    ['441612837462', '491512837462'],
  );
  const exact = await search('pattern=12345678&match=exact');
  t.equal(exact.json.data.hits.length, 0, 'exact compares the whole local part');
  const exact2 = await search('pattern=712345678&match=exact');
  t.equal(exact2.json.data.hits[0].number, '4420712345678');
  const contains = await search('pattern=2345');
  t.equal(contains.json.data.hits[0].number, '4420712345678');
  const vanity = await search('vanity=true');
  t.same(vanity.json.data.hits.map((h: { number: string }) => h.number).sort(), ['4420712345678', '4420755550000']);
  t.ok(vanity.json.data.hits.every((h: { vanity: boolean }) => h.vanity));
  const letters = await search('pattern=JKL&match=contains');
  t.equal(letters.status, 200, 'keypad letters: JKL = 555');
  t.equal(letters.json.data.hits[0].number, '4420755550000');
  const truncated = await search('pattern=7&limit=2');
  t.equal(truncated.json.data.hits.length, 2);
  t.equal(truncated.json.data.truncated, true);
  t.equal((await search('pattern=%24%24')).status, 400);

  // Public catalogue and summary.
  const pub = await api(d, 'GET', '/public/numbers/catalog?sort=monthly_desc', null);
  t.equal(pub.status, 200);
  t.equal(pub.json.data.total, 4);
  t.notOk('requiresKyc' in pub.json.data.groups[0], 'prices only');
  const summary = await api(d, 'GET', '/public/numbers/catalog/summary', null);
  t.equal(summary.status, 200);
  await d.modules.services.numbers.catalog.refreshSummary();
  const ready = await api(d, 'GET', '/public/numbers/catalog/summary', null);
  t.match(ready.json.data, { ready: true, countries: 3, groups: 4, numbers: 10 });
  t.same(
    ready.json.data.cheapestMonthlyByType.map((x: { typeId: string; monthlyPrice: number }) => [
      x.typeId,
      x.monthlyPrice,
    ]),
    [
      ['local', 2.25],
      ['mobile', 5],
      ['toll_free', 1],
    ],
  );
  // 15 a minute per caller.
  let limited = 0;
  for (let i = 0; i < 14; i++) {
    const r = await api(d, 'GET', '/public/numbers/catalog/summary', null);
    if (r.status === 429) limited++;
  }
  t.equal(limited, 1, 'the 16th summary read in a minute is refused');
});

t.test('the store switched off answers disabled, comingSoon', async (t) => {
  const d = await startTestDaemon(t, { numbers: { store_enabled: false, store_disabled_message: 'Soon.' } });
  const buyer = await account(d, 'buyer@example.com');
  for (const path of [
    '/dids/catalog',
    '/dids/catalog/countries',
    '/dids/catalog/types',
    '/dids/mine',
    '/dids/search',
  ]) {
    const r = await api(d, 'GET', path, buyer.key);
    t.equal(r.status, 200, path);
    t.same(r.json.data, { disabled: true, comingSoon: true, message: 'Soon.' }, path);
  }
  const summary = await api(d, 'GET', '/public/numbers/catalog/summary', null);
  t.equal(summary.json.data.ready, false, 'not computed right after the start');
});

t.test('listing requests are limited to 5 per 10 minutes', async (t) => {
  const d = await startTestDaemon(t);
  const seller = await account(d, 'seller@example.com');
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) statuses.push((await api(d, 'POST', '/dids/listing-request', seller.key, {})).status);
  t.same(statuses, [400, 400, 400, 400, 400, 429]);
});
