import pg from 'pg';

// bigint columns (row versions, sequence numbers) stay well inside 2^53: read them as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export { pg };
