"""The classroom: the book's exercises handed out, handed in and graded, offline.

* :mod:`~commlab.classroom.edition`: the student edition of a chapter and its autograder, made
  from the book's notebook (which stays the source) and the reference solutions of
  :mod:`commlab_instructor` (in the repository, not in the installed package).
* :mod:`~commlab.classroom.grade`: a folder of submitted notebooks graded, by stated rules for
  which notebook and which cell, into one row per student and exercise with the check's message,
  in two steps that share nothing but data (:mod:`~commlab.classroom.submission` runs them):
  :mod:`~commlab.classroom.collect` runs a notebook and writes its answers down as plain data;
  :mod:`~commlab.classroom.score` judges them in a fresh process, a function answer in a
  :mod:`~commlab.classroom.sandbox` (a child process reaching the check's objects by handle,
  :mod:`~commlab.classroom.proxies`).
  :mod:`~commlab.classroom.isolation` gives the student's code a read-only system and one
  writable folder; :mod:`~commlab.classroom.reaper` ends whatever it started.
* :mod:`~commlab.classroom.gradebook`: those rows as an instructor uses them: one row per student
  (a CSV Canvas and Moodle import), the long table, the per-exercise summary, feedback files.
* :mod:`~commlab.classroom.limits`: what runs in a submission's kernel while it runs (an
  exercise's time limit; the check otter's autograder calls).

``python -m commlab classroom student | grade`` (:mod:`commlab.cli.classroom`) is the instructor's
command line over these.

**Built on otter-grader** (UC Berkeley's autograder for Jupyter courses,
https://otter-grader.readthedocs.io) for the student edition, not a maker of our own. Of the two
well-kept graders, otter fits a course that runs these notebooks offline on a laptop or on a hub
best: ``otter assign`` makes the student notebook from one annotated notebook, with no Docker, no
database and no course folder layout. nbgrader (the JupyterHub standard) would do the same job but
wants a course directory in its layout, a SQLite gradebook and its Jupyter extensions (installing
it adds ``notebook`` 7 and ``alembic`` beside the book's pinned Jupyter stack). Grading is not
otter's ``otter run``: it runs the checks in the student's own kernel and takes the scores that
kernel reports, so a submission could rewrite them. What we add: the student edition generated
from the book (never edited by hand), grading where the student's code cannot reach a score, a
time limit per exercise and per notebook, and the gradebook and its summary as CSV.
"""
