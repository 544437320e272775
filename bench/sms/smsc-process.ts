// The bench SMSC (smpp-raw startSmsc) in a process of its own, so the daemon's CPU per message is
// measured without the SMSC's. Started by `startSmscProcess`; talks over the IPC channel: it sends
// { port } once listening, answers 'submits' with { submits }, and exits when the channel closes.
import { startSmsc } from './smpp-raw.js';

const smsc = await startSmsc();
process.on('message', (m) => {
  if (m === 'submits') process.send!({ submits: smsc.submits() });
});
process.on('disconnect', () => process.exit(0));
process.send!({ port: smsc.port });
