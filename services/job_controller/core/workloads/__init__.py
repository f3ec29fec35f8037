"""CronJobs and JobFlows (Volcano's cronjob, jobflow and jobtemplate controllers) as part of the
job-controller: a pure core that decides which Jobs to create and delete (core.py) and the statuses of
these kinds in the read model; the service asks admission to create and delete the Jobs."""
