import dgram from 'node:dgram';

/** One request of the caller's dialog; the INVITE offers PCMA with its audio at `mediaPort`. */
function request(method: string, cseq: number, mediaPort: number, opts: { dialog?: boolean; offer?: boolean } = {}) {
  const lines = [
    `${method} sip:[service]@[remote_ip]:[remote_port] SIP/2.0`,
    'Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]',
    `From: "Alice" <sip:15550001111@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]`,
    `To: <sip:[service]@[remote_ip]:[remote_port]>${opts.dialog ? '[peer_tag_param]' : ''}`,
    'Call-ID: [call_id]',
    `CSeq: ${cseq} ${method}`,
    ...(method === 'INVITE' ? ['Contact: <sip:sipp@[local_ip]:[local_port];transport=[transport]>'] : []),
    'Max-Forwards: 70',
  ];
  const sdp = [
    'v=0',
    'o=- 1 1 IN IP4 127.0.0.1',
    's=caller',
    'c=IN IP4 127.0.0.1',
    't=0 0',
    `m=audio ${mediaPort} RTP/AVP 8`,
    'a=rtpmap:8 PCMA/8000',
  ];
  const tail = opts.offer
    ? ['Content-Type: application/sdp', 'Content-Length: [len]', '', ...sdp]
    : ['Content-Length: 0', '', ''];
  return `  <send${method === 'ACK' ? '' : ' retrans="500"'}>\n    <![CDATA[\n${[...lines, ...tail].map((l) => `      ${l}`).join('\n')}\n    ]]>\n  </send>`;
}

/** The supplier's caller to a revenue share number (sipp): INVITE with audio at `mediaPort`, hold, BYE. */
export const caller = (mediaPort: number, holdMs: number) => `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="revenue share caller">
${request('INVITE', 1, mediaPort, { offer: true })}
  <recv response="100" optional="true"/>
  <recv response="180" optional="true"/>
  <recv response="183" optional="true"/>
  <recv response="200" rtd="true"/>
${request('ACK', 1, mediaPort, { dialog: true })}
  <pause milliseconds="${holdMs}"/>
${request('BYE', 2, mediaPort, { dialog: true })}
  <recv response="200" crlf="true"/>
</scenario>`;

/** The caller's media port: counts RTP packets and the ones carrying more than silence. */
export async function mediaSink(t: { teardown(fn: () => void): void }) {
  const sock = dgram.createSocket('udp4');
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  t.teardown(() => sock.close());
  const seen = { packets: 0, voiced: 0 };
  sock.on('message', (m) => {
    if (m.length <= 12 || (m[0]! & 0xc0) !== 0x80) return;
    seen.packets++;
    // PCMA silence is 0xd5/0x55 around zero: a spoken prompt has samples far from it.
    if (m.subarray(12).some((b) => (b ^ 0x55) & 0x70)) seen.voiced++;
  });
  return { port: (sock.address() as dgram.RemoteInfo).port, seen };
}
