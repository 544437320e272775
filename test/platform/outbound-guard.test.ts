import { createServer, type AddressInfo } from 'node:net';
import t from 'tap';
import {
  createTargetGuard,
  isPrivateAddress,
  parseNetworks,
  TargetRefusedError,
} from '../../src/platform/outbound-guard.js';
import { createSelfAddresses } from '../../src/platform/self-addresses.js';
import { loadConfig } from '../../src/config/load.js';
import { connectSmpp } from '../../src/messaging/smpp-lib.js';

t.test('refused: loopback, metadata, private, mapped and unspecified; allowed: public', async (t) => {
  const guard = createTargetGuard();
  for (const a of [
    '127.0.0.1',
    '169.254.169.254',
    '10.0.0.1',
    '::1',
    '[::1]',
    '::ffff:127.0.0.1',
    '0.0.0.0',
    '224.0.0.1',
    'fd00:ec2::254',
    'localhost',
  ]) {
    t.throws(() => guard.checkHost(a, 80), TargetRefusedError, a);
  }
  t.doesNotThrow(() => guard.checkHost('8.8.8.8', 53));
  t.doesNotThrow(() => guard.checkHost('sip.example.com', 5060), 'a name waits for its lookup');
  t.ok(isPrivateAddress('::ffff:8.8.8.8'), 'an IPv4-mapped literal is never a public target');
});

t.test('every answer of a name is checked; the connection gets the checked one', async (t) => {
  const lookup = async (name: string) =>
    name === 'rebind.test'
      ? [
          { address: '93.184.216.34', family: 4 },
          { address: '127.0.0.1', family: 4 },
        ]
      : [{ address: '93.184.216.34', family: 4 }];
  const guard = createTargetGuard({ lookup });
  await t.rejects(guard.resolve('rebind.test', 443), TargetRefusedError);
  t.same(await guard.resolve('public.test', 443), { address: '93.184.216.34', family: 4 });
});

t.test(
  'an operator allow-list lets its networks through, never unspecified or multicast, never the exchange itself',
  async (t) => {
    const guard = createTargetGuard({
      allow: parseNetworks(['127.0.0.0/8', '10.20.0.0/16', '0.0.0.0/0']),
      isSelf: (a, p) => a === '127.0.0.1' && p === 5060,
    });
    t.doesNotThrow(() => guard.checkHost('127.0.0.1', 2775));
    t.doesNotThrow(() => guard.checkHost('10.20.3.4', 2775));
    t.throws(() => guard.checkHost('127.0.0.1', 5060), TargetRefusedError, 'our own SIP listener');
    t.throws(() => guard.checkHost('0.0.0.0', 2775), TargetRefusedError, '0.0.0.0 reaches loopback: never allowed');
    t.throws(() => guard.checkHost('239.1.1.1', 2775), TargetRefusedError);
    t.throws(
      () => parseNetworks(['10.0.0.0/33'], 'security.private_supplier_networks'),
      /security\.private_supplier_networks: "10\.0\.0\.0\/33"/,
    );
    t.throws(() => parseNetworks(['example.com']), /not an address/);
  },
);

t.test('a bad network fails the settings at start, naming the field', async (t) => {
  t.throws(
    () => loadConfig({ overrides: { security: { private_supplier_networks: ['10.0.0.0/8', 'nope'] } } }),
    /security\.private_supplier_networks: "nope"/,
  );
});

t.test("the exchange's own addresses: a wildcard listener is every local address and loopback", async (t) => {
  const config = loadConfig({ overrides: { sip: { host: '0.0.0.0', port: 5070 } } });
  const self = createSelfAddresses(config, { interfaces: () => ['192.0.2.10', '127.0.0.1'] });
  t.ok(self.isSelf('192.0.2.10', 5070));
  t.ok(self.isSelf('127.0.0.5', 5070));
  t.notOk(self.isSelf('192.0.2.10', 5090), 'another port of the same host is not us');
  self.addPorts([5090]);
  t.ok(self.isSelf('192.0.2.10', 5090), 'a port bound at start');
  t.ok(self.isOwnAddress('::ffff:192.0.2.10'));
  t.notOk(self.isOwnAddress('198.51.100.1'));
});

t.test('netLookup refuses a name that resolves to loopback before any socket is opened to it', async (t) => {
  let connections = 0;
  const server = createServer((s) => {
    connections++;
    s.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const port = (server.address() as AddressInfo).port;
  const guard = createTargetGuard({ lookup: async () => [{ address: '127.0.0.1', family: 4 }] });
  const s = connectSmpp({ host: 'smsc.rebind.test', port, tls: false, lookup: guard.netLookup(port) });
  const err = await new Promise<NodeJS.ErrnoException>((resolve) => s.on('error', resolve));
  t.equal(err.code, 'ETARGETREFUSED');
  t.equal(connections, 0, 'the listener saw nothing');
});
