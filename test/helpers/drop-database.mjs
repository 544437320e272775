// Drops one test database, in a process of its own that the test does not wait for: PostgreSQL 15
// forces a checkpoint on every DROP DATABASE, which took one to three seconds a test on a busy
// server. Concurrent drops share a checkpoint. usage: node drop-database.mjs ADMIN_URL NAME
import postgres from 'postgres';

const [adminUrl, name] = process.argv.slice(2);
const sql = postgres(adminUrl, { max: 1, onnotice: () => {}, connect_timeout: 10 });
try {
  await sql`drop database if exists ${sql(name)} with (force)`;
} catch (err) {
  process.exitCode = 1;
  console.error(`drop database ${name}: ${err.message}`);
} finally {
  await sql.end({ timeout: 5 });
}
