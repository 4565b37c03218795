// The web dashboard (DESIGN §10): the page, its preact/htm files and the cookie login, as a
// fetch-style handler the daemon mounts beside the HTTP API. It never imports http/; the page
// itself calls the same tool routes as every other client.
export { createDashboard, type Dashboard, type DashboardOptions } from './dashboard.js';
export { SessionStore, type Session, type SessionStoreOptions } from './sessions.js';
