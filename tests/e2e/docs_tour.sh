# tests/e2e/docs_tour.sh: the README's tour, run as written, so that documentation cannot rot: a
# changed flag or command breaks this test instead of a user's first hour.
# The blocks after the markers in README.md and docs/*.md are extracted in order:
#   <!-- tour -->              the next ```sh block is run
#   <!-- tour: root -->        the same, when root and the testbed can run here (else skipped, said)
#   <!-- tour: file NAME -->   the next fenced block is written to NAME
# and run with `set -euo pipefail` in a scratch folder that has build/slm (this build), configs/,
# and a small corpus.txt, with fewer steps and a smaller vocabulary than the page says (the
# substitutions below: each must still match, so a stale one fails too). Then the files the tour
# promises are checked.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SLM=$(readlink -f "$SLM")
cd "$WORK"
mkdir build && ln -s "$SLM" build/slm
[ -x "$(dirname "$SLM")/slm-delayer" ] && ln -s "$(dirname "$SLM")/slm-delayer" build/slm-delayer
ln -s "$ROOT/configs" configs
c=/usr/share/games/fortunes/songs-poems
if [ -f "$c" ]; then head -c 120000 "$c" > corpus.txt; else gen_corpus 2000 > corpus.txt; fi

root_ok=0
if [ "$(id -u)" -eq 0 ] && [ -x build/slm-delayer ] && command -v iptables-legacy >/dev/null &&
   ip netns add slmtour$$ 2>/dev/null; then
  ip netns delete slmtour$$
  root_ok=1
fi
python3 - "$ROOT" "$root_ok" > tour.sh <<'PY'
import pathlib, re, sys
root, root_ok = pathlib.Path(sys.argv[1]), sys.argv[2] == "1"
subs = [("schedule.max_steps=300", "schedule.max_steps=4"), ("--vocab-size 8192", "--vocab-size 512")]
used = {a: 0 for a, _ in subs}
pages = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
out = ["set -euo pipefail", 'command -v sudo >/dev/null || sudo() { "$@"; }  # root without sudo']
blocks = 0
for page in pages:
    lines = page.read_text().split("\n")
    for i, line in enumerate(lines):
        m = re.fullmatch(r"<!-- tour(?:: (root|file (\S+)))? -->", line.strip())
        if not m:
            continue
        start = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        end = next(j for j in range(start + 1, len(lines)) if lines[j].startswith("```"))
        body = "\n".join(lines[start + 1:end])
        where = f"{page.name}:{start + 1}"
        if m.group(2):
            out.append(f"cat > {m.group(2)} <<'TOUR_EOF'\n{body}\nTOUR_EOF")
        elif m.group(1) == "root" and not root_ok:
            out.append(f'echo "tour: {where} skipped (needs root and the testbed)"')
        else:
            for a, b in subs:
                used[a] += body.count(a)
                body = body.replace(a, b)
            if re.search(r"max_steps=(?!4\b)", body):  # a run the test would not shorten
                sys.exit(f"tour: {where}: a max_steps other than 300; the test shortens only that")
            out.append(f'echo "tour: {where}"\n{body}')
        blocks += 1
stale = [a for a, n in used.items() if n == 0]
if blocks < 3 or stale:
    sys.exit(f"tour: {blocks} blocks found; substitutions that no longer match: {stale}")
print("\n".join(out))
PY
cat tour.sh
bash tour.sh > tour.log 2>&1 || { tail -40 tour.log; fail "the tour failed (the last lines above)"; }
grep '^tour: ' tour.log

# What the tour promises.
grep -q '^ok    precision .*auto picks' tour.log || fail "slm doctor printed no precision check"
grep -q '^ok    blas .* takes fp32 matrix products' tour.log || fail "slm doctor: the BLAS check is not ok ($(grep blas tour.log))"
grep -q '^ok    kernels .* run on all' tour.log || fail "slm doctor: the kernels check is not ok ($(grep kernels tour.log))"
grep -q '"val_split": "tail"' data/manifest.json || fail "one big file: no held-out tail"
grep -q 'its last .* tokens .* are the validation split' tour.log || fail "prepare did not say what it held out"
grep -q '"val_loss"' runs/tour/metrics.jsonl || fail "no validation in the tour's run"
[ -f runs/tour/report/loss.svg ] || fail "slm report wrote no plot"
[ -f tour-hf/model.safetensors ] || fail "no Hugging Face export"
grep -q 'corpus.txt' <(build/slm search tour-index "the wind and the sea" -k 1) || fail "search found nothing"
if [ "$root_ok" = 1 ]; then
  [ -f topology.json ] || fail "the probe wrote no topology"
  [ -f plan.toml ] || fail "the planner wrote no plan"
  ls runs/geo/checkpoints/step_* runs/planned/checkpoints/step_* >/dev/null || fail "the testbed runs saved nothing"
fi
echo "docs tour: ok"
