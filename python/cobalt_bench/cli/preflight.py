'''`cobalt-bench preflight`: the system settings check (cobalt_bench.preflight) as a
command: what it prints and its exit status.'''

from .. import __version__
from .. import preflight


def put_document(doc, json_dest):
    '''The document where --json says: printed for `-`, written atomically to a file, not
    at all without --json (also the inventory's, cli.inventory).'''
    if json_dest == '-':
        print(preflight.json_text(doc), end='')
    elif json_dest is not None:
        preflight.write_json(doc, json_dest)


def command(root='/', interfaces=None, json_dest=None, record=None, probe=True,
            quiet=False):
    '''Runs every check and prints the findings table and the results block (and the JSON
    document with --json -, instead of the text); returns the exit status: 0 compliant,
    1 not compliant or undetermined. A UsageError (2) or CannotRun (3) is raised before
    any setting is read when the arguments are wrong (cli.status.exit_status says it).'''
    tree = preflight.open_tree(root, record, json_dest)
    findings, doc = preflight.inspect(tree, interfaces, probe)
    put_document(doc, json_dest)
    if not quiet and json_dest != '-':
        print(f'cobalt-bench preflight {__version__} on {doc["host"]}'
              + (f' (recorded tree {tree.root})' if not tree.live else ''))
        print(preflight.format_findings(findings))
        print()
        print(preflight.results_block(findings))
    return 0 if doc['compliance']['passed'] else 1
