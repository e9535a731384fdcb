#!/bin/sh
# Runs once, on the Postgres container's first start (docker-entrypoint-initdb.d): the owner
# role, which owns the Vouch tables and runs `vouch migrate`, and its database. CREATEROLE
# lets `vouch migrate --runtime-role vouch_app` create the runtime role; it is no superuser.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  --set owner_password="$VOUCH_OWNER_PASSWORD" <<'SQL'
CREATE ROLE vouch_owner LOGIN CREATEROLE PASSWORD :'owner_password';
CREATE DATABASE vouch OWNER vouch_owner;
SQL
