/** The `agents` table: one file per concern, one import for callers. */
export * from './inventory';
export * from './members';
export * from './admission';
export * from './reports';
export * from './desired';
export * from './certificates';
export * from './targets';
export * from './sessions';
