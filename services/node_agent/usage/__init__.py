"""What the node agent measures of its nodes and pods and publishes as usage samples (docs/usage.md):
/proc readings (procfs.py) and their cpu and memory math (process_usage.py) for the process runtime,
simulated usage for the sim runtime (sources.py), window averages (window.py) and the publishing loop
(publisher.py)."""
