"""Labels from people and files: import, tasks (pooling, assignment, task files, grading sessions), gold,
grader quality, agreement, consensus, adjudication, and the batch overview the label side reads."""
