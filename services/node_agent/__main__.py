"""python -m services.node_agent --nats-url URL --etcd-endpoint HOST:PORT --metrics-port N
--runtime process|sim [--node-name NAME] [--sim-nodes N] --data-dir DIR [...] (--help lists every flag)."""

from services.node_agent.config import NodeAgentConfig
from services.node_agent.service import build
from shared.service import run_main

if __name__ == "__main__":
    run_main(build, NodeAgentConfig, name="node-agent")
