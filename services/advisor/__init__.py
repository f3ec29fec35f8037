"""`lahar advise`: replay one workload under several volcano-scheduler.conf candidates in the simulator and
recommend one for an objective (seed 000's third stage). Pure: candidates, figures, ranking and the
explanation; the CLI shell (services/cli/advise_cmd.py) reads files and the event log and prints."""
