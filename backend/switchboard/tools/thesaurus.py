"""Words people use for the same thing when they ask for a tool, in general English.

Each line is one group of related words (not strict synonyms: "show" and "get" name
the same action in tool land).  The search index adds, next to a tool's name, the
other words of every group a word of its name belongs to, so "make a folder" finds
`create_directory` without naming it.  The groups are kept generic: common verbs and
nouns of software tools (and the shell commands people type for them: ls, mkdir, mv, rm),
nothing about a particular server or request.
"""

from __future__ import annotations

__all__ = ["GROUPS"]

GROUPS: tuple[frozenset[str], ...] = tuple(
    frozenset(line.split())
    for line in """
search find lookup look seek query discover hunt filter match
delete remove erase destroy wipe purge discard forget trash drop rm
create make new add put build generate start open register compose touch
get read show view display fetch open retrieve see print load inspect
update change edit modify set alter adjust tweak patch mark rename
rename move transfer mv
list enumerate browse all every page index
folder directory dir path mkdir ls
file document doc
commit save snapshot
write save store put overwrite
time clock timezone zone hour date day
convert transform
current now present today latest
archive hide restore deactivate
assign give hand delegate reassign allocate owner responsible transfer
summarize summarise summary recap brief overview digest gist
export download extract backup
image picture photo png jpg jpeg gif media logo icon
audio sound media
chart plot graph draw diagram
relation relationship link connect associate
entity node item
observation fact note
memory remember recall knowledge
log history
diff compare difference changes changed modified
status state
repository repo
stage staging staged
reset unstage undo revert
echo repeat
sum add plus total addition calculate compute arithmetic
env environment variable
text plain content contents words
csv spreadsheet table column columns
tree hierarchy structure recursive
size big bigger biggest large larger largest small smallest bytes
info information metadata details properties
analyze analyse statistics stats examine
allowed permitted access accessible
multiple many several batch bulk
ticket issue request
email mail message inbox
user account person member
group team
incident problem
alert alarm notification warning
deployment deploy release rollout
build compile ci
order purchase
event meeting calendar appointment
dataset data
customer client
lead prospect
task todo job
toggle switch enable disable turn
trigger request ask
sampling sample llm
elicitation form input
compress gzip zip
checkout switch
""".strip().splitlines()
)
