"""The programs the hook knows: their options are understood by the rules, or they run
nothing they are given. Everything else is "not known to be inert" (`capability.py`): given
code, fed stdin, or handed a command line, it is treated as running it. Standard library only.
"""

from __future__ import annotations

from massgen_mcp.hook.command import wordset

KNOWN = wordset(
    # files, text and search
    "ls cat head tail less more grep egrep fgrep rg ag ack find fd wc sort uniq cut tr nl "
    "tac rev fold fmt pr column paste join comm diff cmp sdiff colordiff file stat du df "
    "tree realpath readlink basename dirname pwd echo printf true false test [ sleep date "
    "touch mkdir rmdir cp mv rm ln install chmod chown chgrp tee xxd od hexdump strings "
    "base64 md5sum sha1sum sha256sum sha512sum cksum b2sum jq yq sed awk gawk mawk bat "
    "delta less most pv iconv dos2unix unix2dos expand unexpand split csplit shuf seq "
    "yes which whereis type command hash id whoami groups uname hostname uptime ps top "
    "htop free lsof pgrep kill pkill killall nproc env printenv export set unset declare "
    "typeset local readonly alias unalias cd pushd popd dirs source . eval exec exit "
    "return shift wait jobs fg bg disown umask ulimit getopts read mapfile readarray let "
    "history fc trap : time timeout nice nohup xargs parallel tar zip unzip gzip gunzip "
    "bzip2 bunzip2 xz unxz zstd unzstd 7z lz4 zcat bzcat xzcat zless zgrep cpio "
    "curl wget ssh scp sftp rsync nc ncat netcat socat ping dig nslookup host traceroute "
    "ip ifconfig ss netstat openssl gpg age sops "
    # development
    "git gh glab hub python python3 pip pip3 pipx uv uvx poetry pipenv pdm hatch tox nox "
    "pytest py.test mypy ruff black isort flake8 pylint pyright coverage pre-commit "
    "node nodejs npm npx pnpm yarn bun bunx deno tsc eslint prettier jest vitest mocha "
    "playwright webpack vite next tsx ts-node go gofmt cargo rustc rustup rustfmt clippy "
    "make cmake ninja meson bazel gcc g++ cc clang clang++ ld ar nm objdump javac "
    "java mvn gradle gradlew sbt dotnet ruby gem bundle rake rails perl php "
    "composer lua Rscript julia swiftc xcodebuild mix conda mamba micromamba "
    "docker docker-compose podman kubectl helm terraform tofu terragrunt pulumi aws "
    "gcloud az gsutil psql mysql sqlite3 vim vi nvim ex view ed nano "
    "emacs code sudo doas su runuser watch systemd-run at batch atq atrm crontab systemctl "
    "journalctl launchctl shellcheck shfmt direnv dotenv open xdg-open "
    "pbcopy pbpaste xclip xsel wl-copy clear reset tput stty script patch sponge "
    "sh bash zsh dash ksh mksh ash fish csh tcsh rbash busybox toybox osascript pwsh "
    "powershell pypy pypy3 nice ionice stdbuf unbuffer setsid caffeinate flock taskset chrt "
    "strace ltrace chroot builtin "
    "column ts jc gron fzf xmllint tidy pandoc convert ffmpeg magick identify exiftool "
    "envsubst bc expr factor numfmt datamash mlr xsv qsv csvlook glow jless fx jo dasel "
    # test runners, linters and build tools whose -e / -c / -x are filters or config files
    "rspec phpunit ctest cucumber behave robot pest jasmine ava karma bats shellspec hurl "
    "newman k6 gotestsum ginkgo cargo-nextest maturin twine flit sphinx-build mkdocs hugo "
    "jekyll cypress ant lein msbuild skaffold tilt minikube kind k3d buildah "
    "skopeo crane act lefthook commitlint lerna nx turbo rollup esbuild parcel swc babel "
    "terser postcss sass tailwindcss stylelint markdownlint cspell codespell typos vale "
    "hadolint actionlint yamllint kubeval kubeconform taplo bandit pip-audit semgrep trivy grype "
    "syft cosign gitleaks clang-format clang-tidy cppcheck valgrind-none ccache sccache "
    # documentation readers (operands are page names; the pager options are judged by
    # `sources.py`), renderers of piped text and things that speak or print it
    "man info tldr pydoc pydoc3 apropos whatis dot neato fdp sfdp circo twopi plantuml mmdc "
    "d2 lp lpr espeak say")

# Programs that print what they read. The rules share this vocabulary; each takes the parts
# that fit what it judges (a secret reaching the transcript, a file operand that comes from a
# substitution, a look at the guard's files that changes nothing).

#: Print the files they are given and write none.
READERS = wordset("cat less more head tail bat jq grep")
#: grep's other spellings and ripgrep: printers like grep.
GREPS = wordset("egrep fgrep rg")
#: Print what they read transformed (dumped, encoded, cut, sorted, edited); some can also
#: write a file (`sed -i`, `sort -o`, `uniq in out`, `xxd -r`, `yq -i`), so the hardline's
#: look-only list leaves them out.
FILTERS = wordset("nl tac od xxd hexdump strings base64 sed awk sort uniq cut yq")
#: Read every file under the directories they are given (searchers, archivers).
TREE_READERS = wordset("rg ag ack tar bsdtar 7z cpio")
