# tests/e2e/bundle.sh: scripts/bundle.sh packs slm for a node that has PyTorch but no compiler and
# no internet: the bundle's slm has no build-machine paths in it (no RPATH), finds the torch of
# SLM_TORCH_PYTHON, and with an otherwise empty environment trains a tiny model; a node whose torch
# is another version gets one line saying so. Runs with the build made against SLM_PYTHON's torch
# (the PyPI build); skipped with another.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${SLM_PYTHON:-}
[ -n "$PY" ] && want=$("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null) || skip "no SLM_PYTHON with torch"
"$SLM" --version | grep -q "LibTorch ${want%%+*})" || skip "this slm is not built against $PY's torch $want"
command -v patchelf >/dev/null || skip "no patchelf (scripts/setup.sh installs it)"
cd "$WORK"
bash "$ROOT/scripts/bundle.sh" --slm "$SLM" --torch "$PY" --out dist > bundle.log 2>&1 || { cat bundle.log; fail "bundling"; }
b=dist/slm-$want
[ -x "$b/bin/slm" ] && [ -f "dist/slm-$want.tar.gz" ] || { cat bundle.log; ls -R dist; fail "no bundle"; }
! readelf -d "$b/bin/slm.real" | grep -q "R.*PATH" || fail "the bundled slm keeps the build machine's library paths"
ls "$b/lib" | grep -q "libsqlite3" && ls "$b/lib" | grep -q "libpcre2" || fail "SQLite or PCRE2 is not in the bundle"
! ls "$b/lib" | grep -q "libtorch\|libc10" || fail "LibTorch's own libraries were bundled"
# A clean environment: only the node's Python with torch.
node() { env -i HOME="$WORK" PATH=/usr/bin:/bin SLM_TORCH_PYTHON="$PY" "$@"; }
node "$b/bin/slm" --version | grep -q "LibTorch ${want%%+*}" || fail "the bundled slm does not start"
gen_corpus 300 > gen.txt
node "$b/bin/slm" tokenizer train gen.txt --vocab-size 300 --out tok -q > /dev/null || fail "bundled tokenizer train"
node "$b/bin/slm" data prepare gen.txt -t tok --separator blank --out data -q > /dev/null || fail "bundled data prepare"
node "$b/bin/slm" train -c /dev/null --set data.dir=data --set run.dir=run --set model.n_layer=1 --set model.n_head=2 \
  --set model.n_embd=32 --set model.block_size=32 --set batch.batch_size=4 --set batch.micro_batch=4 \
  --set schedule.max_steps=3 --set eval.every=0 --set system.device=cpu > train.log 2>&1 || { cat train.log; fail "bundled train"; }
[ -d run/checkpoints/step_00000003 ] || fail "bundled train saved nothing"
# Another torch on the node: one line, exit 1.
echo "0.0.1" > "$b/TORCH_VERSION"
rc=0; err=$(node "$b/bin/slm" --version 2>&1) || rc=$?
[ $rc -eq 1 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && [[ "$err" == *"was built against torch 0.0.1"* ]] \
  || fail "another torch: exit $rc: $err"
echo "bundle: all passed"
