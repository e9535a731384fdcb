import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';

/** A throwaway MySQL / MariaDB database. Test support only. */
export interface TestMysqlDatabase {
  url: string;
  name: string;
  /** An owner connection for setting up tables and rows. */
  sql: mysql.Connection;
  drop(): Promise<void>;
}

/** The server in MYSQL_URL (default: root on 127.0.0.1:3306, as on the development machine and CI). */
export const mysqlUrl = process.env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/mysql';

/** Create a database with a random name; `drop()` removes it. */
export async function createTestMysqlDatabase(): Promise<TestMysqlDatabase> {
  const name = `vouch_verifiers_${randomBytes(6).toString('hex')}`;
  const admin = await mysql.createConnection({ uri: mysqlUrl });
  await admin.query(`create database ${name}`);
  await admin.query(`use ${name}`);
  const url = new URL(mysqlUrl);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    name,
    sql: admin,
    async drop() {
      await admin.query(`drop database if exists ${name}`);
      await admin.end();
    },
  };
}
