"""The host agent: what a provider runs on each GPU host (`benchctl enroll`, `worker`,
`doctor`, `echo-server`): its enrolment, its Celery node worker confined to its own queue, the
execution of a claimed run and the inventory it reports."""
