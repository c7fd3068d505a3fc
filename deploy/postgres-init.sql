-- Runs once, when the postgres volume is empty (docker-entrypoint-initdb.d).
-- One server, separate roles and databases: `fleet` for the service, `temporal` and
-- `temporal_visibility` for Temporal. The passwords match docker-compose.yml; the
-- postgres port is not published outside the compose network.

CREATE ROLE fleet LOGIN PASSWORD 'fleet';
CREATE DATABASE fleet OWNER fleet;

-- CREATEDB lets Temporal's auto-setup run its (idempotent) create-database step.
CREATE ROLE temporal LOGIN CREATEDB PASSWORD 'temporal';
CREATE DATABASE temporal OWNER temporal;
CREATE DATABASE temporal_visibility OWNER temporal;
