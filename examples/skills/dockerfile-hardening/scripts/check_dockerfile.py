#!/usr/bin/env python3
"""Static checks for common Dockerfile security, size and reproducibility problems.

Usage: check_dockerfile.py [Dockerfile] [--json]
Exit status 1 when any "high" finding is reported.
"""
import json
import re
import sys

SECRET_NAME = re.compile(r"(PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|PRIVATE_?KEY|ACCESS_?KEY)", re.I)
SECRET_FILES = re.compile(r"(^|[\s/])(\.env|id_rsa|id_ed25519|\.npmrc|\.pypirc|credentials|\.aws|\.ssh)(\s|/|$)")


def logical_lines(text):
    """Join backslash continuations; yield (first line number, instruction, arguments)."""
    buf, start = "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not buf:
            start = n
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        parts = buf.strip().split(None, 1)
        yield start, parts[0].upper(), parts[1] if len(parts) > 1 else ""
        buf = ""
    if buf:
        parts = buf.strip().split(None, 1)
        yield start, parts[0].upper(), parts[1] if len(parts) > 1 else ""


def check(text):
    findings = []

    def add(line, rule, sev, msg):
        findings.append({"line": line, "rule": rule, "severity": sev, "message": msg})

    stages, user_set, has_healthcheck, last_from = [], None, False, 0
    for line, ins, args in logical_lines(text):
        if ins == "FROM":
            image = [a for a in args.split() if not a.startswith("--")][0]
            last_from, user_set = line, None
            stages.append(image)
            base = image.split("@")[0]
            if "@sha256:" not in image:
                if ":" not in base.split("/")[-1] and base.lower() != "scratch":
                    add(line, "DH001", "high", f"base image {image!r} has no tag; pin a version (and ideally a digest)")
                elif base.endswith(":latest"):
                    add(line, "DH001", "high", f"base image {image!r} uses :latest; pin a version (and ideally a digest)")
                elif base.lower() != "scratch" and not base.lower().startswith(tuple(s.lower() for s in stages[:-1])):
                    add(line, "DH002", "low", f"pin {image!r} by digest (@sha256:...) for reproducible builds")
        elif ins == "USER":
            user_set = args.strip()
        elif ins == "ADD":
            if re.search(r"https?://", args):
                add(line, "DH010", "medium", "ADD with a URL: use RUN curl/wget with checksum verification, or COPY")
            else:
                add(line, "DH011", "low", "use COPY instead of ADD unless you need automatic archive extraction")
        elif ins in ("ENV", "ARG"):
            toks = args.split()
            # "KEY=value KEY2=value" or the legacy "KEY value" form.
            keys = [t.split("=", 1)[0] for t in toks if "=" in t] if "=" in (toks[0] if toks else "") else toks[:1]
            for key in keys:
                if SECRET_NAME.search(key):
                    add(line, "DH020", "high", f"{ins} {key} looks like a secret; it stays in the image history — use BuildKit secrets (RUN --mount=type=secret)")
                    break
        elif ins == "COPY":
            if SECRET_FILES.search(" " + args + " "):
                add(line, "DH021", "high", "COPY of a credentials file; keep secrets out of the image and add them to .dockerignore")
            if re.match(r"^(--\S+\s+)*\.\s+", args):
                add(line, "DH030", "low", "COPY . copies the whole build context; make sure .dockerignore excludes .git, .env and build output")
        elif ins == "RUN":
            if re.search(r"apt-get\s+install", args):
                if "--no-install-recommends" not in args:
                    add(line, "DH040", "medium", "apt-get install without --no-install-recommends pulls in extra packages")
                if "rm -rf /var/lib/apt/lists" not in args:
                    add(line, "DH041", "medium", "remove /var/lib/apt/lists/* in the same RUN to keep the layer small")
                if "apt-get update" not in args:
                    add(line, "DH042", "medium", "run apt-get update in the same RUN as apt-get install (a separate layer goes stale)")
            if re.search(r"\bapk\s+add\b", args) and "--no-cache" not in args:
                add(line, "DH043", "low", "apk add without --no-cache leaves the index in the layer")
            if re.search(r"\bpip3?\s+install\b", args) and "--no-cache-dir" not in args:
                add(line, "DH044", "low", "pip install without --no-cache-dir keeps the wheel cache in the layer")
            if re.search(r"(curl|wget)[^|;&]*\|\s*(ba|z)?sh", args):
                add(line, "DH050", "high", "piping a download into a shell runs unverified code; download, verify a checksum, then run")
            if re.search(r"chmod\s+(-R\s+)?777", args):
                add(line, "DH051", "medium", "chmod 777 makes files world-writable; grant only what the app user needs")
            if re.search(r"\bsudo\b", args):
                add(line, "DH052", "low", "sudo is unnecessary in a Dockerfile and should not be installed in the image")
        elif ins == "HEALTHCHECK":
            has_healthcheck = True
        elif ins in ("CMD", "ENTRYPOINT") and not args.strip().startswith("["):
            add(line, "DH060", "low", f"shell-form {ins} runs under /bin/sh, which does not forward signals; use exec form [\"app\", \"arg\"]")

    if not stages:
        add(1, "DH000", "high", "no FROM instruction; is this a Dockerfile?")
        return findings
    if stages[-1].lower() != "scratch" and (user_set is None or user_set.split(":")[0] in ("root", "0")):
        add(last_from, "DH070", "high", "the final stage runs as root; add a non-root user and USER <uid> (numeric)")
    if not has_healthcheck:
        add(last_from, "DH080", "low", "no HEALTHCHECK; add one unless an orchestrator probes the container")
    if len(stages) == 1 and re.search(r"\b(gcc|g\+\+|make|build-essential|golang|maven|gradle|npm run build|cargo build|go build)\b", text):
        add(last_from, "DH090", "medium", "build tools in a single-stage image; use a multi-stage build and copy only the artefacts")
    return sorted(findings, key=lambda f: (f["line"], f["rule"]))


def main(argv):
    args = [a for a in argv[1:] if a != "--json"]
    path = args[0] if args else "Dockerfile"
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as e:
        print(f"{path}: {e.strerror}", file=sys.stderr)
        return 2
    findings = check(text)
    if "--json" in argv:
        json.dump(findings, sys.stdout, indent=2)
        print()
    else:
        for f in findings:
            print(f"{path}:{f['line']}: {f['severity']}: {f['rule']} {f['message']}")
        print(f"{len(findings)} finding(s)", file=sys.stderr)
    return 1 if any(f["severity"] == "high" for f in findings) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
