// @ts-check
// The types the router and the pages share (nothing here runs).

/**
 * UI is what a page may change outside <main>, and how it goes to
 * another page.
 * @typedef {object} UI
 * @property {(state: string) => void} setConn shows the stream state in the header
 * @property {(items: {label: string, href?: string}[]) => void} setCrumbs
 *   the breadcrumb trail; the last is this page
 * @property {(title: string) => void} setTitle
 * @property {(to: string, o?: {replace?: boolean}) => void} navigate
 *   goes to a page of the dashboard (its teardown runs first)
 */

export {};
