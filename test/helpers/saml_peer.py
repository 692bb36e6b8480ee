"""The loop both pysaml2 peers of the tests run: one JSON command a line on stdin, one JSON answer a
line on stdout (a failure answers {"fatal": ...} and its traceback goes to stderr)."""
import json
import sys
import traceback


def serve(main):
    for line in sys.stdin:
        try:
            answer = main(json.loads(line))
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            answer = {"fatal": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
