"""The classroom: the book's exercises handed out, handed in and graded, offline.

* :mod:`~commlab.classroom.edition`: the student edition of a chapter and its autograder, made
  from the book's notebook (which stays the source) and the reference solutions of
  :mod:`commlab_instructor` (in the repository, not in the installed package).
* :mod:`~commlab.classroom.grade`: a folder of submitted notebooks graded, by stated rules for
  which notebook and which cell, into one row per student and exercise with the check's message.
* :mod:`~commlab.classroom.gradebook`: those rows as an instructor uses them: one row per student
  (a CSV Canvas and Moodle import), the long table, the per-exercise summary, feedback files.
* :mod:`~commlab.classroom.limits`: what runs in a submission's kernel while it is graded (an
  exercise's time limit, the check's verdict).
* :mod:`~commlab.classroom.command`: ``python -m commlab classroom student | grade``.

**Built on otter-grader** (UC Berkeley's autograder for Jupyter courses,
https://otter-grader.readthedocs.io), not a grader of our own. Of the two well-kept graders,
otter fits a course that runs these notebooks offline on a laptop or on a hub best: ``otter
assign`` makes the student notebook and an autograder zip from one annotated notebook, and
``otter run`` grades one submission in the current Python environment, with no Docker, no
database and no course folder layout; its exception-based tests call our checks as they are.
nbgrader (the JupyterHub standard) would do the same job but wants a course directory in its
layout, a SQLite gradebook and its Jupyter extensions (installing it adds ``notebook`` 7 and
``alembic`` beside the book's pinned Jupyter stack); its CSV export scores whole notebooks, and
per-exercise grades come from its database. What we add to otter: the student edition generated
from the book (never edited by hand), a time limit per exercise (an otter plugin) and per
notebook, and the gradebook and its summary as CSV.
"""
