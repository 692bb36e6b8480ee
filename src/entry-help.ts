/**
 * `--help` (or `-h`) for the long-running entry points: what the process is and where its settings
 * are, then exit 0. Any other argument is refused (exit 64, EX_USAGE): these processes are set up
 * by environment variables only, and an argument they ignore would start a server by surprise.
 */
export function answerHelp(name: string, what: string, argv: string[] = process.argv.slice(2)): void {
  if (argv.length === 0) return;
  const text = `${name}: ${what}\n\n`
    + 'Configured by environment variables only (DATABASE_URL, REDIS_URL, SECRET_KEY, PORT, …): see\n'
    + 'docs/configuration.md. Without DATABASE_URL and REDIS_URL it runs the embedded default.\n';
  if (argv.length === 1 && (argv[0] === '--help' || argv[0] === '-h')) {
    process.stdout.write(text);
    process.exit(0);
  }
  process.stderr.write(`${name}: unknown argument ${JSON.stringify(argv[0])}; it takes none but --help\n\n${text}`);
  process.exit(64);
}
