/**
 * The rooms of src/ and which may import which (docs/architecture.md): no circles, lib/ a leaf,
 * and no import from a lower floor into a higher one. `npm run lint:arch` checks it, and so does
 * test/unit/architecture.test.ts.
 */
const FLOORS = [
  ['lib'],
  ['record'],
  ['slo'],
  ['proxy', 'collectors', 'sim'],
  ['metrics'],
  ['exporters'],
  ['side'],
  ['config'],
  ['daemon'],
  ['demo', 'bench', 'ops'],
  ['commands.ts'],
  ['cli.ts'],
];
// A room is a folder (`lib/`) or a file (`cli.ts`); a folder's entry file beside it belongs to
// the folder's room (`config.ts` is the config room's public face over `config/`).
const path = (rooms) => `^src/(${rooms.map((r) => (r.endsWith('.ts') ? r.replace('.', '\\.') + '$' : `${r}(/|\\.ts$)`)).join('|')})`;

const upward = FLOORS.slice(0, -1).map((rooms, i) => ({
  name: `floor-${i}-${rooms.join('-').replace(/\.ts/g, '')}`,
  comment: `${rooms.join(', ')} may import only from its own room or a lower floor (docs/architecture.md)`,
  severity: 'error',
  from: { path: path(rooms) },
  to: { path: path(FLOORS.slice(i + 1).flat()) },
}));

// Rooms on one floor do not import each other: the proxy, the collectors and the simulator are
// separate sources; demo, bench and ops separate programs.
const sideways = FLOORS.filter((rooms) => rooms.length > 1).flatMap((rooms) =>
  rooms.map((room) => ({
    name: `sideways-${room.replace(/\.ts/, '')}`,
    comment: `${room} does not import the other rooms of its floor (${rooms.join(', ')})`,
    severity: 'error',
    from: { path: path([room]) },
    to: { path: path(rooms.filter((r) => r !== room)) },
  })),
);

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'an import circle', from: {}, to: { circular: true } },
    {
      name: 'lib-is-a-leaf', severity: 'error', comment: 'lib/ imports nothing from src/ outside lib/',
      from: { path: '^src/lib/' }, to: { path: '^src/', pathNot: '^src/lib/' },
    },
    {
      name: 'every-file-in-a-room', severity: 'error', comment: 'every file of src/ belongs to a room of docs/architecture.md',
      from: { path: '^src/', pathNot: path(FLOORS.flat()) }, to: {},
    },
    ...upward,
    ...sideways,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    moduleSystems: ['es6'],
  },
};
