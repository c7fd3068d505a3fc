import packageJson from '../package.json';

/** The service's version (package.json), as peers see it in GET /api/federation/ping. */
export const SERVICE_VERSION: string = packageJson.version;
