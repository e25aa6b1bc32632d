// node-postgres (`pg`), unchanged, against a server: parameters, named prepared statements,
// rows as arrays, types (dates, numerics, arrays, booleans, bigints), RETURNING of a serial,
// transactions with savepoints, error codes, and a pool of concurrent clients.
// Usage: NODE_PATH=<dir holding node_modules/pg> node node_pg_check.js CONNECTION_STRING
'use strict';
const assert = require('assert');
const { Client, Pool } = require('pg');

function ok(what, got, want) {
  assert.deepStrictEqual(got, want, `${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  console.log(`ok: ${what}`);
}

async function main() {
  const url = process.argv[2];
  const c = new Client({ connectionString: url });
  await c.connect();
  await c.query('DROP TABLE IF EXISTS node_item');
  await c.query(`CREATE TABLE node_item (id serial PRIMARY KEY, name text NOT NULL UNIQUE,
      added date, price numeric(8,2), tags text[], stock bigint, active boolean DEFAULT true)`);

  const inserted = await c.query(
    'INSERT INTO node_item (name, added, price, tags, stock) VALUES ($1, $2, $3, $4, $5) RETURNING id, active',
    ['lamp', '2026-12-02', '19.90', ['home', 'light'], '9007199254740993']);
  ok('RETURNING a serial and a default', inserted.rows, [{ id: 1, active: true }]);
  ok('rowCount of an INSERT', inserted.rowCount, 1);

  const read = await c.query({ name: 'by-name', text: 'SELECT name, price, tags, stock, added::text AS added FROM node_item WHERE name = $1', values: ['lamp'] });
  ok('a named prepared statement', read.rows, [{ name: 'lamp', price: '19.90', tags: ['home', 'light'], stock: '9007199254740993', added: '2026-12-02' }]);
  const again = await c.query({ name: 'by-name', text: 'SELECT name, price, tags, stock, added::text AS added FROM node_item WHERE name = $1', values: ['none'] });
  ok('the named statement run again', again.rowCount, 0);

  const arrays = await c.query({ text: 'SELECT id, name FROM node_item WHERE id = ANY($1::int[])', values: [[1, 2]], rowMode: 'array' });
  ok('rows as arrays, = ANY of an array parameter', arrays.rows, [[1, 'lamp']]);

  const dates = await c.query('SELECT added FROM node_item');
  ok('a date as a JavaScript Date', dates.rows[0].added instanceof Date, true);

  try {
    await c.query('INSERT INTO node_item (name) VALUES ($1)', ['lamp']);
    assert.fail('a duplicate was inserted');
  } catch (e) {
    ok('a unique violation: 23505 and its constraint', [e.code, e.constraint], ['23505', 'node_item_name_key']);
  }

  await c.query('BEGIN');
  await c.query("INSERT INTO node_item (name) VALUES ('desk')");
  await c.query('SAVEPOINT s1');
  await c.query("INSERT INTO node_item (name) VALUES ('chair')");
  await c.query('ROLLBACK TO SAVEPOINT s1');
  try {
    await c.query('SELECT 1/0');
  } catch (e) {
    ok('division by zero: 22012', e.code, '22012');
  }
  try {
    await c.query('SELECT 1');
  } catch (e) {
    ok('a failed transaction refuses statements: 25P02', e.code, '25P02');
  }
  await c.query('ROLLBACK');
  const names = await c.query('SELECT name FROM node_item ORDER BY name');
  ok('the rolled-back transaction left nothing', names.rows.map((r) => r.name), ['lamp']);

  // A pool: concurrent clients each updating the same row by one.
  const pool = new Pool({ connectionString: url, max: 4 });
  await Promise.all(Array.from({ length: 40 }, () =>
    pool.query('UPDATE node_item SET stock = stock + 1 WHERE name = $1', ['lamp'])));
  const stock = await pool.query("SELECT stock FROM node_item WHERE name = 'lamp'");
  ok('40 concurrent increments through a pool', stock.rows[0].stock, '9007199254741033');
  await pool.end();

  await c.query('DROP TABLE node_item');
  await c.end();
  console.log('node-postgres: all checks passed');
}

main().catch((e) => {
  console.error(`FAIL: ${e.message}`);
  process.exit(1);
});
