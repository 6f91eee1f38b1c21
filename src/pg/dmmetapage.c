/*
 * dmmetapage.c — the metapage (block 0) of a dmindex index as a page:
 * reading it (with or without an error for an index that has none or an
 * unknown version) and laying it out and writing it with generic WAL.
 * What the metapage names (the remote tree) is dmmeta.c's business; the
 * collector (dmgc.c) reads metapages too, so this sits below both.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "dmam.h"

bool
dmindex_try_read_meta(Relation index, DmMetaPageData *meta)
{
	Buffer		buf;

	if (RelationGetNumberOfBlocks(index) == 0)
		return false;
	buf = ReadBuffer(index, DMINDEX_METAPAGE_BLKNO);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	memcpy(meta, PageGetContents(BufferGetPage(buf)), sizeof(*meta));
	UnlockReleaseBuffer(buf);
	return meta->magic == DMINDEX_META_MAGIC && meta->version == DMINDEX_META_VERSION &&
		meta->nmemnodes > 0 && meta->nmemnodes <= DMINDEX_MAX_MEMNODES;
}

void
dmindex_read_meta(Relation index, DmMetaPageData *meta)
{
	if (RelationGetNumberOfBlocks(index) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" has no metapage", RelationGetRelationName(index)),
				 errhint("REINDEX the index.")));
	if (!dmindex_try_read_meta(index, meta))
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is not a dmindex index or has an unsupported version",
						RelationGetRelationName(index)),
				 errhint("REINDEX the index.")));
}

void
dmindex_fill_metapage(Page page, const DmMetaPageData *meta)
{
	PageInit(page, BLCKSZ, 0);
	memcpy(PageGetContents(page), meta, sizeof(*meta));
	/* pd_lower past the data so full-page images may omit the hole */
	((PageHeader) page)->pd_lower = ((char *) PageGetContents(page) + sizeof(*meta)) - (char *) page;
}

void
dmindex_write_metapage(Relation index, const DmMetaPageData *meta, bool extend)
{
	Buffer		buf;
	GenericXLogState *state;
	Page		page;

	buf = extend ? ReadBuffer(index, P_NEW) : ReadBuffer(index, DMINDEX_METAPAGE_BLKNO);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	Assert(BufferGetBlockNumber(buf) == DMINDEX_METAPAGE_BLKNO);
	state = GenericXLogStart(index);
	page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);
	dmindex_fill_metapage(page, meta);
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
}
